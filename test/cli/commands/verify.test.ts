import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SignatureDiagnosis } from '../../../src/cli/commands/verify';
import { fingerprintKey } from '../../../src/verification/secondKeys';
import { fixture, signatureHeaderOf } from '../../support/fixtures';
import { OTHER_KEY, OTHER_POS_ID, orderBody, POS_ID, SECOND_KEY, sign } from '../../support/signing';
import { cliEnv, parseJson, runCli } from '../cliSupport';

let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'nr-verify-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function save(body: string | Buffer): string {
  const file = path.join(dir, `body-${files++}.json`);
  writeFileSync(file, body);
  return file;
}

const sha256 = (body: string | Buffer): string => createHash('sha256').update(body).digest('hex');
const sandboxOnly = cliEnv({ SECOND_KEYS: `${POS_ID}:${SECOND_KEY}` });
const bothKeys = cliEnv({});

async function verify(body: string | Buffer, signature: string, env = sandboxOnly, extra: string[] = []) {
  const run = await runCli(['verify', save(body), '--signature', signature, '--json', ...extra], env);
  expect(run.stdout).not.toContain(SECOND_KEY);
  expect(run.stdout).not.toContain(OTHER_KEY);
  return { run, diagnosis: parseJson<SignatureDiagnosis>(run) };
}

describe('verify', () => {
  it('When a real captured notification is checked with the sandbox key, then it verifies and names the POS, key fingerprint, algorithm and hashed bytes', async () => {
    const f = fixture('real-01');
    const { run, diagnosis } = await verify(f.body, signatureHeaderOf(f) as string);
    expect(run.code).toBe(0);
    expect(diagnosis).toMatchObject({
      verified: true,
      result: 'verified',
      matchedKey: { posId: POS_ID, keyFingerprint: fingerprintKey(SECOND_KEY) },
      header: { algorithm: 'MD5', sender: 'checkout', signatureHexDigits: 32 },
      body: {
        bytes: Buffer.byteLength(f.body),
        sha256: sha256(f.body),
        kind: 'order',
        status: 'COMPLETED',
        merchantPosId: POS_ID,
      },
      keys: [{ posId: POS_ID, fingerprint: fingerprintKey(SECOND_KEY), verifies: true }],
      pos: { merchantPosId: POS_ID, verifyingKeyMatchesPos: true },
    });
  });

  it('When the saved body was pretty-printed after receipt, then it fails and says the compact form would verify', async () => {
    const pretty = fixture('real-10');
    const compact = fixture('real-11');
    const { run, diagnosis } = await verify(pretty.body, signatureHeaderOf(pretty) as string);
    expect(run.code).toBe(1);
    expect(diagnosis.result).toBe('invalid_signature');
    expect(diagnosis.body.prettyPrinted).toBe(true);
    expect(diagnosis.keys).toEqual([{ posId: POS_ID, fingerprint: fingerprintKey(SECOND_KEY), verifies: false }]);
    const alternative = diagnosis.alternatives.find((a) => a.verifiesWith !== null);
    expect(alternative).toMatchObject({
      form: expect.stringContaining('compact'),
      bytes: Buffer.byteLength(compact.body),
      sha256: sha256(compact.body),
    });
    expect(diagnosis.hints.join('\n')).toMatch(/compact JSON .*WOULD verify \(POS 300746/);
  });

  it('When the saved body gained a trailing newline, then it says the body without it would verify, in the human form too', async () => {
    const f = fixture('real-00');
    const file = save(`${f.body}\n`);
    const run = await runCli(['verify', file, '--signature', signatureHeaderOf(f) as string], sandboxOnly);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^NOT VERIFIED: the signature matches none of the 1 key\(s\) tried with MD5/);
    expect(run.stdout).toContain(`${Buffer.byteLength(f.body) + 1} bytes, SHA-256 ${sha256(`${f.body}\n`)}`);
    expect(run.stdout).toMatch(
      /without the trailing newline: \d+ bytes, SHA-256 [0-9a-f]{64}: VERIFIES \(POS 300746, key [0-9a-f]{12}\)/,
    );
    expect(run.stdout).toMatch(/Hint: the body without the trailing newline WOULD verify/);
  });

  it('When the body comes from a POS with no configured key, then it fails and says that only that POS key can verify it', async () => {
    const f = fixture('real-02');
    const { run, diagnosis } = await verify(f.body, signatureHeaderOf(f) as string);
    expect(run.code).toBe(1);
    expect(diagnosis.pos).toEqual({ merchantPosId: '375848', keysConfiguredForPos: 0, verifyingKeyMatchesPos: null });
    expect(diagnosis.hints.join('\n')).toContain('no key is configured for POS 375848');
    expect(diagnosis.alternatives.every((a) => a.verifiesWith === null)).toBe(true);
  });

  it('When the signature verifies with a key of another POS than order.merchantPosId, then it fails as pos_mismatch', async () => {
    const body = orderBody({ orderId: 'POSX1', status: 'PENDING', merchantPosId: POS_ID });
    const { run, diagnosis } = await verify(body, sign(body, OTHER_KEY), bothKeys);
    expect(run.code).toBe(1);
    expect(diagnosis).toMatchObject({ verified: false, result: 'pos_mismatch', matchedKey: { posId: OTHER_POS_ID } });
    expect(diagnosis.keys.map((k) => [k.posId, k.verifies])).toEqual([
      [POS_ID, false],
      [OTHER_POS_ID, true],
    ]);
  });

  it('When SHA-256 is used and a key is given with --key, then only that key is tried', async () => {
    const body = orderBody({ orderId: 'SHA1', status: 'PENDING', merchantPosId: OTHER_POS_ID });
    const { run, diagnosis } = await verify(body, sign(body, OTHER_KEY, 'SHA-256'), sandboxOnly, [
      '--key',
      `${OTHER_POS_ID}:${OTHER_KEY}`,
    ]);
    expect(run.code).toBe(0);
    expect(diagnosis.header.algorithm).toBe('SHA-256');
    expect(diagnosis.keys).toEqual([{ posId: OTHER_POS_ID, fingerprint: fingerprintKey(OTHER_KEY), verifies: true }]);
  });

  it('When the header has no signature field, then it names the header problem', async () => {
    const f = fixture('real-19');
    const { run, diagnosis } = await verify(f.body, signatureHeaderOf(f) as string);
    expect(run.code).toBe(1);
    expect(diagnosis).toMatchObject({ result: 'missing_signature', header: { problem: 'missing_signature' } });
    expect(diagnosis.explanation).toMatch(/no single signature= field/);
  });

  it('When the signature has the length of another algorithm than the header names, then it says which', async () => {
    const f = fixture('real-00');
    const sha = createHash('sha256').update(f.body).update(SECOND_KEY).digest('hex');
    const { run, diagnosis } = await verify(f.body, `sender=checkout;signature=${sha};algorithm=MD5;content=DOCUMENT`);
    expect(run.code).toBe(1);
    expect(diagnosis.result).toBe('invalid_signature_encoding');
    expect(diagnosis.hints).toEqual([
      expect.stringContaining('64 hex digits, which is SHA-256, but the header says algorithm=MD5'),
    ]);
  });

  it('When the headers were saved to a file, then the OpenSvc-Signature line is read from it', async () => {
    const f = fixture('real-04');
    const headers = path.join(dir, 'headers.txt');
    writeFileSync(
      headers,
      Object.entries(f.headers)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\r\n'),
    );
    const run = await runCli(['verify', save(f.body), '--signature-file', headers], sandboxOnly);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^VERIFIED: verified with the key of POS 300746/);
  });

  it('When SECOND_KEYS is unset outside production, then it tries the public sandbox key, as the service does', async () => {
    const f = fixture('real-01');
    const run = await runCli(
      ['verify', save(f.body), '--signature', signatureHeaderOf(f) as string, '--json'],
      cliEnv({ SECOND_KEYS: undefined }),
    );
    expect(run.code).toBe(0);
    expect(parseJson<SignatureDiagnosis>(run).keys).toEqual([
      { posId: POS_ID, fingerprint: fingerprintKey(SECOND_KEY), verifies: true },
    ]);
  });

  it('When no key is configured in production, SECOND_KEYS is malformed, or the body file is missing, then it is a usage error', async () => {
    const f = fixture('real-00');
    const production = await runCli(
      ['verify', save(f.body), '--signature', 'x'],
      cliEnv({ SECOND_KEYS: undefined, NODE_ENV: 'production', DATABASE_URL: 'postgres://u@h/d' }),
    );
    expect(production.code).toBe(2);
    expect(production.stderr).toMatch(/SECOND_KEYS: is required with NODE_ENV=production/);
    const typo = await runCli(
      ['verify', save(f.body), '--signature', 'x'],
      cliEnv({ SECOND_KEYS: `${POS_ID}:${SECOND_KEY}:SHA-999` }),
    );
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('SECOND_KEYS: entry 1: the algorithm after the key is not');
    expect(typo.stderr).not.toContain(SECOND_KEY);
    expect(
      (
        await runCli(
          ['verify', path.join(dir, 'missing.json'), '--signature', signatureHeaderOf(f) as string],
          sandboxOnly,
        )
      ).code,
    ).toBe(2);
    expect((await runCli(['verify', save(f.body)], sandboxOnly)).code).toBe(2);
  });
});
