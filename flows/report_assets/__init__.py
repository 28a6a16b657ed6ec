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
.heat-wrap { overflow: auto; max-width: 100%; }
canvas.heat { display: block; cursor: crosshair; }
#tip { position: fixed; z-index: 20; pointer-events: none; background: #1d2430; color: #fff;
       font-size: 12px; padding: 4px 8px; border-radius: 4px; white-space: pre; }
details.note > summary { cursor: pointer; }
section.history .hist { min-width: 420px; }
svg.history .step { stroke: #fff; stroke-width: 0.8; }
"""

JS = r"""
(function () {
  'use strict';
  var tip = document.getElementById('tip');
  var examples = null;

  function data() {
    if (!examples) {
      var el = document.getElementById('sysdiff-examples');
      examples = el ? JSON.parse(el.textContent) : {};
    }
    return examples;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  // ---------------------------------------------------------------- examples
  function parts(label) {
    var i = label.indexOf(':');
    return [label.slice(0, i), label.slice(i + 1)];
  }

  function shown(view, label) {
    return view === 'deprel' ? parts(label)[1] : label;
  }

  function wrong(view, label, gold) {
    if (view === 'head') { return parts(label)[0] !== parts(gold)[0]; }
    if (view === 'deprel') { return parts(label)[1] !== parts(gold)[1]; }
    return label !== gold;
  }

  function systemLabels(flat) {
    var m = {};
    for (var i = 0; flat && i < flat.length; i += 2) { m[flat[i]] = flat[i + 1]; }
    return m;
  }

  function renderExample(D, view, fam, a, b, ref) {
    var at = ref.split('.'), s = at[0], w = Number(at[1]);
    var sent = D.sents[s], forms = sent[2], labels = D.labels[fam];
    var gold = D.gold[fam][s];
    var sys = [systemLabels(((D.sys[fam] || {})[a] || {})[s]),
               systemLabels(((D.sys[fam] || {})[b] || {})[s])];
    var box = el('div', 'sent');
    var note = el('div', 'note', sent[0] + ', word ' + w + ' ');
    note.appendChild(el('b', '', forms[w - 1]));
    box.appendChild(note);
    box.appendChild(el('p', 'text', sent[1]));
    var table = el('table', 'words'), body = el('tbody');
    var rows = [['form'], ['gold'], [D.names[a]], [D.names[b]]].map(function (r) {
      var tr = el('tr'); tr.appendChild(el('td', 'src', r[0])); body.appendChild(tr);
      return tr;
    });
    for (var p = Math.max(1, w - D.context); p <= Math.min(gold.length, w + D.context); p++) {
      var g = gold[p - 1];
      if (g === undefined || g < 0) { continue; }
      var hit = p === w ? 'hit' : '';
      var head = el('td', hit, forms[p - 1]);
      head.appendChild(el('br')); head.appendChild(el('small', '', String(p)));
      rows[0].appendChild(head);
      rows[1].appendChild(el('td', hit, shown(view, labels[g])));
      for (var k = 0; k < 2; k++) {
        var code = sys[k][p] === undefined ? g : sys[k][p];
        var cls = [hit, wrong(view, labels[code], labels[g]) ? 'wrong' : ''].join(' ').trim();
        rows[k + 2].appendChild(el('td', cls, shown(view, labels[code])));
      }
    }
    table.appendChild(body);
    box.appendChild(table);
    return box;
  }

  function render(details) {
    if (details.dataset.done || !details.dataset.x) { return; }
    details.dataset.done = '1';
    var D = data(), v = details.dataset.v, f = details.dataset.f;
    var a = details.dataset.a, b = details.dataset.b;
    details.dataset.x.split(' ').forEach(function (ref) {
      details.appendChild(renderExample(D, v, f, a, b, ref));
    });
  }

  document.addEventListener('toggle', function (e) {
    if (e.target.matches && e.target.matches('details.ex') && e.target.open) {
      render(e.target);
    }
  }, true);

  function openTarget(id) {
    var target = document.getElementById(id);
    if (!target) { return; }
    for (var p = target; p; p = p.parentElement) {
      if (p.tagName === 'DETAILS') { p.open = true; }
    }
    if (target.matches('details.ex')) { render(target); }
    document.querySelectorAll('details.ex.hit').forEach(function (d) {
      d.classList.remove('hit');
    });
    target.classList.add('hit');
  }
  document.addEventListener('click', function (e) {
    var a = e.target.closest ? e.target.closest('a[href^="#ex-"]') : null;
    if (a) { openTarget(a.getAttribute('href').slice(1)); }
  });
  window.addEventListener('hashchange', function () { openTarget(location.hash.slice(1)); });

  // ---------------------------------------------------------------- heatmaps
  function colour(t) {
    var lo = [255, 255, 255], hi = [31, 95, 168];
    return 'rgb(' + lo.map(function (l, i) { return Math.round(l + (hi[i] - l) * t); })
      .join(',') + ')';
  }

  function drawHeat(canvas) {
    var H = JSON.parse(canvas.dataset.heat), names = H.names, n = names.length;
    var cell = Math.max(9, Math.min(54, Math.floor(900 / Math.max(n, 1))));
    var font = Math.max(8, Math.min(12, cell - 1));
    var upright = cell < 16;  // dense: column labels vertical, one per column
    var ctx = canvas.getContext('2d');
    ctx.font = font + 'px system-ui, Arial, sans-serif';
    var longest = 0;
    names.forEach(function (s) { longest = Math.max(longest, ctx.measureText(s).width); });
    var pad = Math.ceil(longest) + 10;
    var top = Math.ceil(longest * (upright ? 1 : 0.75)) + 12;
    var width = pad + n * cell + (upright ? 4 : Math.ceil(longest * 0.77) + 4);
    var height = top + n * cell + 4;
    var ratio = window.devicePixelRatio || 1;
    canvas.width = width * ratio; canvas.height = height * ratio;
    canvas.style.width = width + 'px'; canvas.style.height = height + 'px';
    ctx = canvas.getContext('2d');
    ctx.scale(ratio, ratio);
    ctx.font = font + 'px system-ui, Arial, sans-serif';
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < n; i++) {
      for (var j = 0; j < n; j++) {
        if (i !== j) { lo = Math.min(lo, H.d[i * n + j]); hi = Math.max(hi, H.d[i * n + j]); }
      }
    }
    var gap = cell >= 12 ? 2 : cell >= 7 ? 1 : 0;
    for (i = 0; i < n; i++) {
      for (j = 0; j < n; j++) {
        var d = H.d[i * n + j];
        var t = hi > lo ? 0.15 + 0.85 * (d - lo) / (hi - lo) : (hi > 0 ? 0.5 : 0);
        ctx.fillStyle = i === j ? '#eef1f5' : colour(t);
        ctx.fillRect(pad + j * cell, top + i * cell, cell - gap, cell - gap);
        if (cell >= 34 && i !== j) {
          ctx.fillStyle = t > 0.6 ? '#fff' : '#1d2430';
          ctx.textAlign = 'center';
          ctx.fillText((d / 100).toFixed(1) + ['', '*', '**'][+H.m[i * n + j]],
                       pad + j * cell + cell / 2 - 1, top + i * cell + cell / 2 + 4);
        }
      }
    }
    ctx.fillStyle = '#1d2430';
    names.forEach(function (s, k) {
      ctx.textAlign = 'right';
      ctx.fillText(s, pad - 6, top + k * cell + cell / 2 + font / 3);
      ctx.save();
      ctx.translate(pad + k * cell + cell / 2 + (upright ? font / 3 : 0), top - 6);
      ctx.rotate(upright ? -Math.PI / 2 : -Math.PI / 4.5);
      ctx.textAlign = 'left';
      ctx.fillText(s, 0, 0);
      ctx.restore();
    });
    canvas._heat = {H: H, pad: pad, top: top, cell: cell};
  }

  function cellAt(canvas, e) {
    var g = canvas._heat, r = canvas.getBoundingClientRect();
    var j = Math.floor((e.clientX - r.left - g.pad) / g.cell);
    var i = Math.floor((e.clientY - r.top - g.top) / g.cell);
    var n = g.H.names.length;
    return (i >= 0 && j >= 0 && i < n && j < n && i !== j) ? [i, j] : null;
  }

  document.querySelectorAll('canvas.heat').forEach(function (canvas) {
    drawHeat(canvas);
    canvas.addEventListener('mousemove', function (e) {
      var c = cellAt(canvas, e);
      if (!c) { tip.hidden = true; return; }
      var H = canvas._heat.H, n = H.names.length, k = c[0] * n + c[1];
      tip.textContent = H.names[c[0]] + ' vs ' + H.names[c[1]] + '\n' + H.title.replace(
        /\s*\(%\).*/, '') + ': ' + (H.d[k] / 100).toFixed(2) + '%' +
        ['', '\nAR p < 0.05', '\nAR p < 0.01'][+H.m[k]];
      tip.style.left = (e.clientX + 14) + 'px'; tip.style.top = (e.clientY + 14) + 'px';
      tip.hidden = false;
    });
    canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
    canvas.addEventListener('click', function (e) {
      var c = cellAt(canvas, e);
      if (!c) { return; }
      var H = canvas._heat.H, a = H.names[c[0]], b = H.names[c[1]];
      var section = canvas.closest('section');
      var found = Array.prototype.find.call(section.querySelectorAll('details.pair'),
        function (d) {
          return (d.dataset.sys1 === a && d.dataset.sys2 === b) ||
                 (d.dataset.sys1 === b && d.dataset.sys2 === a);
        });
      if (found) { found.open = true; found.scrollIntoView({block: 'start'}); }
    });
  });

  if (location.hash) { openTarget(location.hash.slice(1)); }
})();
"""
