import { createHash, timingSafeEqual } from 'node:crypto';
import { settingEntries } from '../parsing/settingList';
import { NAME, RESERVED_NAMES, type ConsoleToken } from '../console/sessions/session';

/**
 * Every token the admin port takes, and who holds one (pure): ADMIN_TOKEN (the whole JSON API, and the console as
 * the operator `admin`), the console's people (CONSOLE_OPERATOR_TOKENS, CONSOLE_VIEWER_TOKENS: the console only)
 * and the downstream teams (EVENT_TEAM_TOKENS: the event feed, and replays into their own queues only). Each door
 * asks `holderOf` and decides what the holder may do there.
 */

/** A downstream team's token: it reads the feed and replays into the queues whose names start with its prefix. */
export interface TeamToken {
  name: string;
  token: string;
  queuePrefix: string;
}

/** Who presented a token the admin port knows. */
export type TokenHolder =
  { kind: 'admin' } | { kind: 'person'; person: ConsoleToken } | { kind: 'team'; team: TeamToken };

/** Who called a data route of the JSON API: ADMIN_TOKEN's holder, this machine (an open loopback port), or a team. */
export type Caller = { kind: 'admin' } | { kind: 'local' } | { kind: 'team'; team: TeamToken };

/** Who the audit trail records for a caller: `admin`, `local` (each an operator), or the team's name. */
export function auditActorOf(caller: Caller): { actor: string; role: 'operator' | 'team' } {
  return caller.kind === 'team' ? { actor: caller.team.name, role: 'team' } : { actor: caller.kind, role: 'operator' };
}

/**
 * A queue prefix: letters, digits and `._-`, starting with a letter or digit (so never empty), at most 100
 * characters, never `amq.` (the broker's own names).
 */
const QUEUE_PREFIX = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** RabbitMQ's reserved names (server-named queues, its own exchanges): no replay goes there. */
export const isBrokerName = (queue: string): boolean => queue.toLowerCase().startsWith('amq.');

/**
 * `name:token:queue-prefix` entries, comma-separated (EVENT_TEAM_TOKENS): a name as a console person's, a token
 * of at least 16 characters (it may hold `:`: the prefix is what follows the last one), a prefix as above.
 * Problems name the entry by its number, never its token.
 */
export function parseTeamTokens(value: string): { tokens: TeamToken[]; problems: string[] } {
  const { entries, problems } = settingEntries(value);
  const tokens: TeamToken[] = [];
  for (const { text, number } of entries) {
    const first = text.indexOf(':');
    const last = text.lastIndexOf(':');
    const name = first === -1 ? '' : text.slice(0, first);
    const token = first === last ? '' : text.slice(first + 1, last);
    const queuePrefix = first === last ? '' : text.slice(last + 1);
    if (!NAME.test(name))
      problems.push(`entry ${number}: must be name:token:queue-prefix, the name of letters, digits and _@-`);
    else if (RESERVED_NAMES.includes(name))
      problems.push(`entry ${number} (${name}): the name is reserved (${RESERVED_NAMES.join(', ')}); choose another`);
    else if (first === last) problems.push(`entry ${number} (${name}): must be name:token:queue-prefix`);
    else if (token.length < 16) problems.push(`entry ${number} (${name}): the token must be at least 16 characters`);
    else if (!QUEUE_PREFIX.test(queuePrefix) || isBrokerName(queuePrefix))
      problems.push(
        `entry ${number} (${name}): the queue prefix must be letters, digits and ._- (1 to 100, starting with a ` +
          'letter or digit, not amq.)',
      );
    else if (tokens.some((t) => t.name === name)) problems.push(`entry ${number} (${name}): the name is used twice`);
    else {
      const overlapping = tokens.find(
        (t) => t.queuePrefix.startsWith(queuePrefix) || queuePrefix.startsWith(t.queuePrefix),
      );
      if (overlapping)
        problems.push(
          `entry ${number} (${name}): its queue prefix and ${overlapping.name}'s overlap (one starts with the other), ` +
            "so one team could replay into the other's queues; give each team a prefix of its own",
        );
      else tokens.push({ name, token, queuePrefix });
    }
  }
  return { tokens, problems };
}

/** What the admin port's token settings cannot hold together, named by setting and entry, never by token. */
export function tokenSettingsProblems({
  adminToken,
  operators,
  viewers,
  teams,
}: {
  adminToken: string | null;
  operators: readonly ConsoleToken[];
  viewers: readonly ConsoleToken[];
  teams: readonly TeamToken[];
}): string[] {
  const problems: string[] = [];
  const people = [
    ...operators.map((t, i) => ({ setting: 'CONSOLE_OPERATOR_TOKENS', number: i + 1, ...t })),
    ...viewers.map((t, i) => ({ setting: 'CONSOLE_VIEWER_TOKENS', number: i + 1, ...t })),
  ];
  for (const viewer of people.filter((p) => p.setting === 'CONSOLE_VIEWER_TOKENS'))
    if (operators.some((o) => o.name === viewer.name))
      problems.push(
        `CONSOLE_VIEWER_TOKENS: entry ${viewer.number} (${viewer.name}): the name is also in CONSOLE_OPERATOR_TOKENS; ` +
          'give each person one role',
      );
  teams.forEach((team, i) => {
    if (people.some((p) => p.name === team.name))
      problems.push(
        `EVENT_TEAM_TOKENS: entry ${i + 1} (${team.name}): the name is also a console person's; the audit trail ` +
          'could not tell them apart: choose another',
      );
  });
  // One token, one holder: whose name would the audit trail record, and which door's rights would it open?
  const holders = [
    ...(adminToken === null ? [] : [{ label: 'ADMIN_TOKEN', token: adminToken }]),
    ...people.map((p) => ({ label: `${p.setting}: entry ${p.number} (${p.name})`, token: p.token })),
    ...teams.map((t, i) => ({ label: `EVENT_TEAM_TOKENS: entry ${i + 1} (${t.name})`, token: t.token })),
  ];
  holders.forEach((holder, i) => {
    const first = holders.findIndex((other) => other.token === holder.token);
    if (first !== i)
      problems.push(
        `${holder.label}: the token is also ${holders[first]?.label ?? ''}'s; give each person, team and the admin ` +
          'API a token of its own',
      );
  });
  return problems;
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** The admin port's tokens, each with its holder, as `holderOf` compares them. */
export interface AdminTokens {
  adminToken: string | null;
  people: readonly ConsoleToken[];
  teams: readonly TeamToken[];
}

/**
 * Who holds the presented token, or null. Every configured token is compared (SHA-256 digests, in constant
 * time), whichever matches and wherever it is in the list, so the time taken does not say whether, or which,
 * one matched.
 */
export function holderOf({ adminToken, people, teams }: AdminTokens, presented: string): TokenHolder | null {
  const candidates: Array<{ token: string; holder: TokenHolder }> = [
    ...(adminToken === null ? [] : [{ token: adminToken, holder: { kind: 'admin' } as const }]),
    ...people.map((person) => ({ token: person.token, holder: { kind: 'person', person } as const })),
    ...teams.map((team) => ({ token: team.token, holder: { kind: 'team', team } as const })),
  ];
  const given = digest(presented);
  let found: TokenHolder | null = null;
  for (const candidate of candidates)
    if (timingSafeEqual(digest(candidate.token), given) && found === null) found = candidate.holder;
  return found;
}

/**
 * Why a replay may not go to this queue, before the broker is asked (null: it may, if it exists and no other
 * connection holds it exclusively): the broker's own names for everyone, and for a team any queue outside its
 * prefix.
 */
export function replayQueueProblem(team: TeamToken | null, queue: string): string | null {
  if (isBrokerName(queue))
    return `${queue} is a name of the broker's own (amq.*: a server-named queue belongs to the connection that made it); replay into a queue of your own`;
  if (team !== null && !queue.startsWith(team.queuePrefix))
    return `the team ${team.name} replays only into queues whose names start with ${team.queuePrefix}`;
  return null;
}
