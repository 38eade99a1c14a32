import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parseSecondKeys, type SecondKey } from '../../verification/secondKeys';
import { diagnoseSignature, headerValueOf, type SignatureDiagnosis } from '../../verification/signatureDiagnosis';
import { action, EXIT_FAILURE, EXIT_OK, readInput, UsageError, type CliIo, type CliState, type ExitCode } from './io';
import { readConfig } from './database';
import { collect, withJson } from './options';
import { emit } from './output';

/** `verify`: the file and header read, the diagnosis (src/verification/signatureDiagnosis.ts) written out. */

/** What `--json` prints, besides the file's name. */
export type { SignatureDiagnosis } from '../../verification/signatureDiagnosis';

/** The diagnosis for people. */
function humanLines(source: string, d: SignatureDiagnosis): string[] {
  const lines = [`${d.verified ? 'VERIFIED' : 'NOT VERIFIED'}: ${d.explanation}`, ''];
  lines.push(`Body: ${source}, ${d.body.bytes} bytes, SHA-256 ${d.body.sha256}`);
  lines.push(
    `  hashed: these ${d.body.bytes} bytes followed by the second key; ` +
      `${d.body.json ? 'JSON' : d.body.utf8 ? 'UTF-8 text, not JSON' : 'not UTF-8'}` +
      `${d.body.kind ? `, ${d.body.kind} notification ${d.body.status}` : ''}` +
      `${d.body.merchantPosId !== null ? `, merchantPosId ${d.body.merchantPosId}` : ''}` +
      `${d.body.prettyPrinted ? ', pretty-printed' : ''}${d.body.trailingNewline ? ', trailing newline' : ''}${d.body.crlf ? ', CRLF line endings' : ''}` +
      `${d.body.byteOrderMark ? ', byte order mark' : ''}`,
  );
  if (d.header.problem) lines.push(`Header: ${d.header.problem}`);
  else
    lines.push(
      `Header: algorithm ${d.header.algorithm}${d.header.sender ? `, sender ${d.header.sender}` : ''}, signature of ${d.header.signatureHexDigits ?? '?'} hex digits`,
    );
  if (d.keys.length > 0) {
    lines.push(`Keys tried (${d.header.algorithm}):`);
    for (const k of d.keys)
      lines.push(`  POS ${k.posId}  key ${k.fingerprint}  ${k.verifies ? 'verifies' : 'no match'}`);
  } else if (!d.header.problem) {
    lines.push('Keys tried: none');
  }
  if (d.pos) {
    lines.push(
      `POS check: order.merchantPosId ${d.pos.merchantPosId}; ${d.pos.keysConfiguredForPos} key(s) configured for it` +
        (d.pos.verifyingKeyMatchesPos === null
          ? ''
          : d.pos.verifyingKeyMatchesPos
            ? '; the verifying key belongs to it'
            : '; the verifying key belongs to another POS'),
    );
  }
  if (d.alternatives.length > 0) {
    lines.push('Re-serializations tried:');
    for (const a of d.alternatives) {
      lines.push(
        `  ${a.form}: ${a.bytes} bytes, SHA-256 ${a.sha256}: ${a.verifiesWith ? `VERIFIES (POS ${a.verifiesWith.posId}, key ${a.verifiesWith.keyFingerprint})` : 'no match'}`,
      );
    }
  }
  for (const hint of d.hints) lines.push(`Hint: ${hint}`);
  return lines;
}

interface VerifyOptions {
  signature?: string;
  signatureFile?: string;
  key?: string[];
  json?: boolean;
}

export async function verify(io: CliIo, bodyFile: string, options: VerifyOptions): Promise<ExitCode> {
  if ((options.signature === undefined) === (options.signatureFile === undefined)) {
    throw new UsageError('give the signature header as --signature <value> or --signature-file <file> (one of them)');
  }
  let headerText = options.signature ?? '';
  if (options.signatureFile !== undefined) {
    try {
      headerText = await readFile(options.signatureFile, 'utf8');
    } catch (error) {
      throw new UsageError(
        `cannot read ${options.signatureFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
  }
  const keys: SecondKey[] = [];
  if (options.key && options.key.length > 0) {
    // One flag per key, so a key may contain a comma.
    options.key.forEach((entry, index) => {
      const parsed = parseSecondKeys(entry);
      if (parsed.problems.length > 0 || parsed.keys.length !== 1)
        throw new UsageError(`--key number ${index + 1} is not of the form posId:secondKey`);
      keys.push(...parsed.keys);
    });
  } else {
    // The service's keys, as it reads them: outside production, unset, the public sandbox key.
    keys.push(...readConfig(io, {}, { receiving: true }).secondKeys);
  }
  const body = await readInput(bodyFile, 'the body file');

  const diagnosis = diagnoseSignature(body, headerValueOf(headerText), keys);
  emit(io, options.json === true, { file: bodyFile, ...diagnosis }, () => humanLines(bodyFile, diagnosis));
  return diagnosis.verified ? EXIT_OK : EXIT_FAILURE;
}

export function registerVerify(program: Command, io: CliIo, state: CliState): void {
  const command = program
    .command('verify')
    .summary('check a saved notification against the configured keys, offline, and say why it fails')
    .description(
      'Checks a saved notification body against its signature header offline, exactly as the receiver does ' +
        '(hex(hash(body bytes + second key)) with every configured key, then the POS of the verifying key against ' +
        'order.merchantPosId), and says why it fails: the header problem, which keys were tried (POS and fingerprint, ' +
        'never the key), the algorithm, the length and SHA-256 of the hashed bytes, and whether a re-serialized copy ' +
        '(pretty-printed, trailing newline, BOM, CRLF) would have verified in its original form. ' +
        'Keys: SECOND_KEYS (as the service reads it: unset outside production, the public sandbox key), ' +
        'or --key posId:secondKey (repeatable) instead.\n\n' +
        'Exit codes: 0 verified; 1 not verified (or the key belongs to another POS); 2 usage error.',
    )
    .argument('<bodyFile>', 'the body exactly as received (- for stdin)')
    .option('--signature <value>', 'the OpenSvc-Signature header value (sender=...;signature=...;algorithm=...)')
    .option('--signature-file <file>', 'a file holding the header value or the saved request headers')
    .option(
      '--key <posId:secondKey>',
      'a key to try instead of SECOND_KEYS (repeatable)',
      collect((v: string) => v),
    );
  withJson(command).action(action(state, (bodyFile: string, options: VerifyOptions) => verify(io, bodyFile, options)));
}
