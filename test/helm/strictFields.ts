/**
 * Unknown-field check for rendered objects. kubernetes-models' `.validate()` checks types
 * and required fields but lets unknown fields through, and a mis-indented template line
 * (a field at the wrong level) is exactly such a field: the API server would drop it or,
 * with strict field validation, refuse the object. TypeScript's excess-property check on
 * object literals catches it at every depth, so each object is type-checked against the
 * kubernetes-models interface of its kind, in memory.
 */
import path from 'node:path';
import ts from 'typescript';
import type { K8sObject } from './helm';

/** Module and interface name of the kubernetes-models type of an apiVersion/kind. */
function typeOf(object: K8sObject): { module: string; name: string } {
  const module = object.apiVersion.startsWith('monitoring.coreos.com/')
    ? `@kubernetes-models/prometheus-operator/${object.apiVersion}/${object.kind}`
    : `kubernetes-models/${object.apiVersion}/${object.kind}`;
  return { module, name: `I${object.kind}` };
}

/** The declaration files the checks have read, by path: they do not change while the tests run. */
const declarations = new Map<string, ts.SourceFile>();

/** Type errors (unknown fields first among them) per object, as "Kind/name: message". */
export function strictFieldErrors(objects: K8sObject[]): string[] {
  const file = path.join(__dirname, '__rendered_objects__.ts');
  const firstLines: number[] = []; // the line each object's declaration starts on
  let source = '';
  objects.forEach((object, i) => {
    const { module, name } = typeOf(object);
    firstLines.push(source.split('\n').length - 1);
    source += `import type { ${name} as T${i} } from ${JSON.stringify(module)};\nexport const o${i}: T${i} = ${JSON.stringify(object, null, 1)};\n`;
  });
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = (
    (exists) => (name: string) =>
      name === file || exists(name)
  )(host.fileExists.bind(host));
  host.readFile = (name) => (name === file ? source : readFile(name));
  host.getSourceFile = (name, language, onError, create) => {
    if (name === file) return ts.createSourceFile(name, source, language);
    // The kubernetes-models declarations, parsed once for every call of the file's tests rather than each time.
    const known = declarations.get(name);
    if (known) return known;
    const parsed = getSourceFile(name, language, onError, create);
    if (parsed) declarations.set(name, parsed);
    return parsed;
  };
  const program = ts.createProgram([file], options, host);
  const sourceFile = program.getSourceFile(file);
  const diagnostics = [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)];
  return diagnostics.map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    const object = objects[firstLines.filter((first) => first <= line).length - 1];
    return `${object ? `${object.kind}/${object.metadata.name}` : '?'}: ${message}`;
  });
}
