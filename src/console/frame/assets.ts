/**
 * The console's stylesheet, a string constant so that the compiled dist/ carries it with no copy step. No
 * script: every page works with forms and links, and the CSP allows none.
 */
export const CONSOLE_CSS = `
:root { color-scheme: light; --ink: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #f6f8fa; --accent: #0a58ca;
  --bad: #b42318; --warn: #8a5300; --good: #1a7f37; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #fff; }
header { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 8px 16px; background: var(--bg);
  border-bottom: 1px solid var(--line); }
header nav { display: flex; gap: 12px; flex-wrap: wrap; }
header .who { margin-left: auto; color: var(--muted); display: flex; gap: 8px; align-items: center; }
main { padding: 16px; max-width: 1200px; }
a { color: var(--accent); }
h1 { font-size: 1.4rem; margin: 0 0 12px; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 24px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top;
  overflow-wrap: anywhere; }
th { background: var(--bg); font-weight: 600; }
pre { background: var(--bg); padding: 8px; overflow: auto; max-height: 30em; white-space: pre-wrap;
  overflow-wrap: anywhere; }
input, select, button { font: inherit; padding: 4px 8px; }
button { cursor: pointer; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
button.primary { background: var(--accent); color: #fff; border-color: var(--accent); }
form.inline { display: inline; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 0.85em; border: 1px solid var(--line); }
.badge.recon { background: #fff4e5; border-color: var(--warn); color: var(--warn); }
.badge.bad { background: #fdecea; border-color: var(--bad); color: var(--bad); }
.badge.good { background: #e9f7ec; border-color: var(--good); color: var(--good); }
.muted { color: var(--muted); }
.problem { border-left: 4px solid var(--bad); padding: 8px 12px; background: #fdecea; }
.notice { border-left: 4px solid var(--accent); padding: 8px 12px; background: var(--bg); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
svg.chart { max-width: 100%; height: auto; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; }
.filters label { display: flex; flex-direction: column; font-size: 0.9em; }
header form[role=search] { display: flex; flex-wrap: wrap; gap: 4px 8px; align-items: center; }
header .hint { flex-basis: 100%; color: var(--muted); font-size: 0.85em; }
footer { margin: 32px 16px 16px; padding-top: 8px; border-top: 1px solid var(--line); color: var(--muted);
  font-size: 0.9em; max-width: 1200px; }
.field { color: var(--muted); font-size: 0.9em; }
a.term { color: inherit; text-decoration: underline dotted; text-underline-offset: 2px; }
a.term:hover, a.term:focus { color: var(--accent); }
.actions { margin: 12px 0; }
.money { white-space: nowrap; font-variant-numeric: tabular-nums; }
.as-received { border-bottom: 2px dotted var(--warn); }
.severity { display: inline-block; padding: 0 6px; border-radius: 8px; font-weight: 600; white-space: nowrap;
  border: 1px solid var(--line); }
.severity.critical { background: #fdecea; border-color: var(--bad); color: var(--bad); }
.severity.warning { background: #fff4e5; border-color: var(--warn); color: var(--warn); }
.severity.info { background: var(--bg); color: var(--muted); }
.severity.ok { background: #e9f7ec; border-color: var(--good); color: var(--good); }
table.board td:nth-child(3) { min-width: 11em; }
table.board caption { text-align: left; color: var(--muted); padding-bottom: 4px; }
table.board tr.critical td:first-child { border-left: 4px solid var(--bad); }
table.board tr.warning td:first-child { border-left: 4px solid var(--warn); }
.summary { font-weight: 600; }
.result.done { border-left: 4px solid var(--good); padding: 8px 12px; background: #e9f7ec; }
.result.partly { border-left: 4px solid var(--warn); padding: 8px 12px; background: #fff4e5; }
.result.not_done { border-left: 4px solid var(--bad); padding: 8px 12px; background: #fdecea; }
dl.glossary dt { font-weight: 600; margin-top: 8px; }
dl.glossary dd { margin: 2px 0 0 16px; }
dl.glossary dt:target, tr:target { background: #fff8c5; }
.toc { margin: 8px 0 16px; }
.notice-inline { background: var(--bg); padding: 0 4px; }
/* Printed, a page is the record of an order: every body in full, no navigation. */
@media print {
  header nav, header form, header .who, .actions, form { display: none; }
  main { max-width: none; padding: 0; }
  pre { max-height: none; overflow: visible; }
  details > summary { list-style: none; }
  details::details-content { content-visibility: visible; display: block; }
  a { color: inherit; text-decoration: none; }
}
`;
