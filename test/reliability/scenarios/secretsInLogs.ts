import { sign } from '../../support/signing';
import type { RunReport, ScenarioDefinition } from '../report';
import { harness } from '../support/scenario';
import { BASIC_HEADER, BUYER, secrets } from '../support/secrets';

export const SECRETS: ScenarioDefinition = {
  id: 11,
  title: 'Secrets never reach the logs',
  done:
    'Every line (stdout and stderr) of every service process started by the scenarios before it searched for both second keys, the Basic ' +
    "credential (plain, base64, password alone), every signature the suite sent (any hex run of a signature length), the buyer's " +
    'e-mail, phone, names and customer id, the broker credential, and every string value of 8 characters or more of every JSON body ' +
    'the suite sent (long ones by 16-character windows; identifiers the service logs on purpose and timestamps aside); each scenario also scans its own services at its end.',
};

export function secretsScenario(report: RunReport): void {
  const h = harness(report, SECRETS);
  describe(`${SECRETS.id}. ${SECRETS.title}`, () => {
    h.check('the scanner finds a planted secret (control)', async () => {
      const header = sign('{"planted":true}', 'b6ca15b0d1020e8094d9b5f8d163db54');
      secrets.addSignatureHeader(header);
      secrets.addBody(Buffer.from(JSON.stringify({ order: { description: 'Planted gift for Ms Quennell' } })));
      const planted = [
        '{"msg":"quarantined","detail":"near \\"gift for ms quennell\\""}',
        `{"msg":"x","sig":"${header}"}`,
        `{"msg":"x","auth":"${BASIC_HEADER}"}`,
        `{"msg":"x","email":"${BUYER.email.toUpperCase()}"}`,
        '{"msg":"x","key":"b6ca15b0d1020e8094d9b5f8d163db54"}',
      ];
      const { findings } = secrets.scan([{ label: 'planted', logs: planted }]);
      expect(new Set(findings.map((f) => f.line)).size).toBe(planted.length);
    });

    h.check(
      'no second key, Basic credential, signature, buyer data or broker credential in any log line of any service started',
      async () => {
        const sources = secrets.allSources.filter((s) => s.label !== 'planted');
        const { lines, findings } = secrets.scan(sources);
        h.figure('services scanned', sources.length);
        h.figure('log lines scanned', lines);
        h.figure(
          'secrets searched',
          `${secrets.fixedCount} fixed values, ${secrets.signatureCount} signatures sent, ` +
            `${secrets.bodyFragmentCount} fragments of the bodies sent`,
        );
        h.figure('secrets in logs', findings.length);
        expect(sources.length).toBeGreaterThan(0);
        expect(findings.slice(0, 10)).toEqual([]);
      },
    );
  });
}
