"""Static assets of the HTML report (inlined into the page: it must open without a network)."""

CSS = """
:root { --ok: #2e7d32; --bad: #c62828; --chg: #ef8f00; --ink: #1d2430; --muted: #5b6472;
        --line: #d9dee5; --best: #c8e6c9; --worst: #ffcdd2; --accent: #1f5fa8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif;
       color: var(--ink); margin: 0; background: #f6f7f9; }
header.top { background: #1d2430; color: #fff; padding: 14px 24px; }
header.top h1 { margin: 0; font-size: 22px; }
header.top p { margin: 4px 0 0; color: #c9d1dc; }
nav.toc { padding: 8px 24px; background: #fff; border-bottom: 1px solid var(--line);
          position: sticky; top: 0; z-index: 5; }
nav.toc a { margin-right: 12px; color: var(--accent); text-decoration: none; }
main { padding: 8px 24px 40px; }
section.corpus > h2 { margin: 18px 0 6px; font-size: 20px; }
section.view { background: #fff; border: 1px solid var(--line); border-radius: 6px;
               padding: 10px 16px 16px; margin: 14px 0; }
section.view > h3 { margin: 4px 0 8px; font-size: 18px; }
h4 { margin: 14px 0 6px; font-size: 15px; }
.grid { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
.grid > div { min-width: 0; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 4px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: right;
         white-space: nowrap; }
th { background: #eef1f5; font-weight: 600; }
.scroll th { position: sticky; top: 0; }
td.l, th.l { text-align: left; }
td.best { background: var(--best); }
td.worst { background: var(--worst); }
.scroll { max-height: 460px; overflow: auto; border: 1px solid var(--line); }
.note { color: var(--muted); font-size: 12.5px; margin: 2px 0 6px; }
.sig { color: var(--bad); font-weight: 600; }
.correction { color: var(--ok); } .new_error { color: var(--bad); }
.changed_error { color: var(--chg); }
details.pair { border: 1px solid var(--line); border-radius: 4px; margin: 6px 0;
               padding: 4px 10px; }
details.pair > summary { cursor: pointer; font-weight: 600; }
.classes { display: flex; flex-wrap: wrap; gap: 16px; }
section.view, details.ex { scroll-margin-top: 44px; }
details.ex { margin: 6px 0; padding: 4px 8px; border-left: 3px solid var(--line); }
details.ex:target, details.ex.hit { border-left-color: var(--accent); background: #f0f5fc; }
details.ex > summary { cursor: pointer; }
.sent { margin: 6px 0 10px; }
.sent .text { margin: 2px 0; color: var(--muted); white-space: normal; }
table.words td, table.words th { font-size: 12.5px; padding: 2px 6px; text-align: center; }
table.words td.src { text-align: left; font-weight: 600; }
table.words .hit { background: #fff3c4; font-weight: 700; }
table.words .wrong { color: var(--bad); }
svg text { font-family: system-ui, Arial, sans-serif; }
th.grp, td.grp { border-left: 1px solid var(--line); }
th[colspan] { text-align: center; }
tr.grp td { border-top: 2px solid var(--line); }
table.trans td.cell { min-width: 52px; text-align: center; font-weight: 600; }
table.trans td.diag, table.trans td.other { background: #eef1f5; color: var(--muted); }
table.trans td.tot, table.trans th { color: var(--muted); }
table.agreement td { min-width: 64px; text-align: center; }
table.agreement td.diag { background: #eef1f5; color: var(--muted); }
p.summary { margin: 4px 0 8px; }
p.summary span { margin-right: 14px; }
section.coref div.crit { border-left: 3px solid var(--line); padding-left: 10px; }
td.wrap { white-space: normal; max-width: 360px; }
"""

JS = """
(function () {
  function openTarget(id) {
    var el = document.getElementById(id);
    if (!el) { return; }
    var p = el;
    while (p) { if (p.tagName === 'DETAILS') { p.open = true; } p = p.parentElement; }
    document.querySelectorAll('details.ex.hit').forEach(function (d) {
      d.classList.remove('hit');
    });
    el.classList.add('hit');
  }
  document.addEventListener('click', function (e) {
    var a = e.target.closest ? e.target.closest('a[href^="#ex-"]') : null;
    if (a) { openTarget(a.getAttribute('href').slice(1)); }
  });
  window.addEventListener('hashchange', function () { openTarget(location.hash.slice(1)); });
  if (location.hash) { openTarget(location.hash.slice(1)); }
})();
"""
