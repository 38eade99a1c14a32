import { readFileSync } from 'node:fs';

/** Where a CPU profile's time went, by layer of the notification's path (self time of each sample). */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const LAYERS: Array<[string, (name: string, url: string) => boolean]> = [
  ['idle (waiting on the database, broker or clients)', (name) => name === '(idle)'],
  ['garbage collection', (name) => name === '(garbage collector)'],
  [
    'socket writes/reads (syscalls)',
    (name, url) => url === '' && /^(writev|writeBuffer|writeString|writeUtf8String|read|onStreamRead)$/.test(name),
  ],
  ['intake (HTTP edge, checks, body)', (_n, url) => /\/dist\/(intake|http)\//.test(url)],
  [
    'verification (signature)',
    (name, url) => /\/dist\/verification\//.test(url) || name === 'Hash' || name === 'digest' || name === 'update',
  ],
  ['parsing (JSON, typed notification)', (name, url) => /\/dist\/parsing\//.test(url) || name === 'parse'],
  ['recording (batch, projection rules)', (_n, url) => /\/dist\/recording\//.test(url)],
  ['outbox relay and events', (_n, url) => /\/dist\/outbox\//.test(url) || /node_modules\/amqplib\//.test(url)],
  ['pg driver', (_n, url) => /node_modules\/pg(-[a-z]+)?\//.test(url)],
  ['kysely', (_n, url) => /node_modules\/kysely\//.test(url)],
  [
    'express and router',
    (_n, url) =>
      /node_modules\/(express|router|body-parser|finalhandler|send|type-is|content-type|on-finished)\//.test(url),
  ],
  ['logging (pino)', (_n, url) => /node_modules\/(pino|sonic-boom)/.test(url)],
  ['metrics (prom-client)', (_n, url) => /node_modules\/prom-client\//.test(url)],
  ['node http and streams', (_n, url) => /^node:(_http|http|net|internal\/streams|stream|events)/.test(url)],
];

export function summarizeProfile(path: string): Array<{ layer: string; percent: number }> {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const layer = node
      ? (LAYERS.find(([, match]) => match(node.callFrame.functionName, node.callFrame.url))?.[0] ?? 'other')
      : 'other';
    totals.set(layer, (totals.get(layer) ?? 0) + dt);
  });
  return [...totals]
    .map(([layer, time]) => ({ layer, percent: Math.round((1000 * time) / total) / 10 }))
    .sort((a, b) => b.percent - a.percent);
}
