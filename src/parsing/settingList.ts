/** One entry of a comma-separated setting, numbered from 1 as the operator counts them. */
export interface SettingEntry {
  number: number;
  /** The entry, trimmed. */
  text: string;
}

/**
 * Splits a comma-separated setting (SECOND_KEYS, PAYMENT_API_CREDENTIALS, ALLOWED_SOURCE_IPS,
 * TRUST_PROXY) into its entries, refusing what would otherwise be read as something else: an empty
 * entry (a stray or doubled ','), and an entry holding a space, a ';' or a quote (a separator or a
 * quoting that is not this setting's), which no entry of any of them may hold. Problems name the
 * entry's number, never its text: an entry may hold a secret.
 */
export function settingEntries(value: string): { entries: SettingEntry[]; problems: string[] } {
  const entries: SettingEntry[] = [];
  const problems: string[] = [];
  value.split(',').forEach((raw, index) => {
    const text = raw.trim();
    const number = index + 1;
    if (text === '') problems.push(`entry ${number} is empty (a stray ',')`);
    else if (/[\s;]/.test(text)) problems.push(`entry ${number} holds a space or ';': entries are separated by ','`);
    else if (/["'`]/.test(text)) problems.push(`entry ${number} holds a quote: write the value without quotes`);
    else entries.push({ number, text });
  });
  return { entries, problems };
}
