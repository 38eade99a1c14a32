import type { SignatureMatch } from './verifySignature';

/**
 * A POS's key vouches for its own payments only. Two rules, both pure:
 *
 * 1. A body that names its POS (order.merchantPosId) is vouched for only by that POS's keys.
 * 2. An order belongs to the POS of the first authentic notification recorded for it or for one of its
 *    refunds (its merchantPosId, else the POS whose key verified it); from then on only that POS's keys
 *    vouch for the order and its refunds.
 *
 * Several keys can verify one body only when one key is configured for several POS.
 */

/** The keys that verified a body, narrowed to the POS it names (rule 1); none left means pos_mismatch. */
export function signersFor(matches: readonly SignatureMatch[], merchantPosId: string | null): SignatureMatch[] {
  return merchantPosId === null ? [...matches] : matches.filter((m) => m.posId === merchantPosId);
}

/**
 * The signer that vouches for a notification touching orders whose owners are given (undefined: not bound
 * yet): the key of the one POS that owns them all (rule 2), else, when none is bound, the first signer
 * (the named POS's, after rule 1). None: pos_mismatch.
 */
export function signerFor(
  signers: readonly SignatureMatch[],
  owners: ReadonlyArray<string | undefined>,
): SignatureMatch | undefined {
  const bound = new Set(owners.filter((owner): owner is string => owner !== undefined));
  if (bound.size > 1) return undefined;
  const [owner] = bound;
  return owner === undefined ? signers[0] : signers.find((s) => s.posId === owner);
}
