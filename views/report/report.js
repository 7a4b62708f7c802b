// SPDX-License-Identifier: GPL-2.0-only
// Draws the dltrace report's charts from the embedded JSON with uPlot
// (views/report/vendor/, inlined into the page before this script): canvas
// charts with zoom (drag; double-click zooms out), the values under the cursor
// (in the legend, or the line under the chart for the matrix and the
// timeline) and legends whose entries hide or show their series.
//
// Each chart is a section element (attributes data-chart=ID, data-series=N,
// data-points=M); a
// status element at the bottom says how many charts were drawn and any script
// error, which is what the browser test reads. window.dltraceCharts maps each
// chart id to its uPlot object (for the test and the console). "#chart=ID" in
// the URL draws only that chart, sized to the window (what `dltrace report
// --png` screenshots).
(function () {
  "use strict";
  var errors = [];
  var drawn = 0;
  var plots = {};
  window.dltraceCharts = plots;
  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                 "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
  var FONT = '11px "DejaVu Sans", Arial, sans-serif';

  function finish() {
    var s = document.getElementById("status");
    if (!s) return;
    s.setAttribute("data-charts", String(drawn));
    s.setAttribute("data-errors", String(errors.length));
    s.textContent = errors.length ? "error: " + errors.join("; ") : "ok: " + drawn + " charts drawn";
  }
  window.onerror = function (message, source, line) {
    errors.push(message + " (line " + line + ")");
    finish();
  };

  function html(tag, parent, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmtBytes(v) {
    var units = ["B", "KB", "MB", "GB", "TB"];
    var i = 0;
    while (Math.abs(v) >= 1000 && i < units.length - 1) { v /= 1000; i++; }
    return (Math.abs(v) >= 100 || i === 0 ? v.toFixed(0) : v.toPrecision(3)) + " " + units[i];
  }
  function fmtNum(v) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toPrecision(3) + "G";
    if (a >= 1e6) return (v / 1e6).toPrecision(3) + "M";
    if (a >= 1e4) return (v / 1e3).toPrecision(3) + "k";
    if (a >= 100) return v.toFixed(0);
    return Number(v.toPrecision(3)).toString();
  }
  function fmtUs(us) {
    var a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toPrecision(3) + " s";
    if (a >= 1e3) return (us / 1e3).toPrecision(3) + " ms";
    return Number(us.toPrecision(3)) + " us";
  }
  function secs(v) { return fmtNum(v) + " s"; }
  // An axis's tick labels from a formatter of one value.
  function ticks(fmt) {
    return function (u, splits) { return splits.map(function (v) { return v == null ? "" : fmt(v); }); };
  }
  // Text width in CSS pixels, for axis sizes.
  var measure = document.createElement("canvas").getContext("2d");
  measure.font = FONT;
  function textWidth(s) { return measure.measureText(s).width; }

  // A chart's section: title, subtitle, then the plot's place (s.box).
  function section(id, title, sub) {
    var s = html("section", document.getElementById("charts"), undefined, "chart");
    s.id = "chart-" + id;
    s.setAttribute("data-chart", id);
    s.setAttribute("data-series", "0");
    s.setAttribute("data-points", "0");
    html("h2", s, title);
    html("p", s, sub, "sub");
    s.box = html("div", s, undefined, "plot");
    return s;
  }
  function empty(s, text) {
    html("p", s, text, "empty");
  }
  function axis(o) {
    var a = { font: FONT, labelFont: FONT, stroke: "#333", grid: { stroke: "#eee", width: 1 },
              ticks: { stroke: "#888", width: 1, size: 4 } };
    for (var k in o) if (o.hasOwnProperty(k)) a[k] = o[k];
    return a;
  }
  // Creates the uPlot chart in section S from OPTS and DATA; POINTS is how many
  // values it draws (the section's data-points).
  function plot(s, id, opts, data, points) {
    var base = { drag: { x: true, y: false, setScale: true }, points: { size: 7 } };
    opts.cursor = opts.cursor || {};
    for (var k in base) if (!opts.cursor.hasOwnProperty(k)) opts.cursor[k] = base[k];
    var u = new uPlot(opts, data, s.box);
    plots[id] = u;
    s.setAttribute("data-series", String(opts.series.length - 1));
    s.setAttribute("data-points", String(points));
    return u;
  }
  function readout(s, text) {
    return html("p", s, text, "readout");
  }
  // Double-click zooms out: x as uPlot does, and Y back to [0, YMAX].
  function resetY(ymax) {
    return function (u, targ, handler) {
      return function (e) {
        handler(e);
        u.setScale("y", { min: 0, max: ymax });
        return null;
      };
    };
  }
  // Tick positions for category labels (lanes, ranks, bars): centers of whole
  // units at least SPACE pixels apart on the plot's DIM axis.
  function categorySplits(count, center, space) {
    return function (u, axisIdx, min, max) {
      var dim = axisIdx === 0 ? u.bbox.width : u.bbox.height;
      var per = dim / (window.devicePixelRatio || 1) / Math.max(max - min, 1e-9);
      var step = Math.max(1, Math.ceil(space / Math.max(per, 1e-9)));
      var out = [];
      var first = Math.max(0, Math.ceil(min - center));
      first = Math.ceil(first / step) * step;
      for (var i = first; i + center <= max && i < count; i += step) out.push(i + center);
      return out;
    };
  }

  // ---- line charts ------------------------------------------------------

  // Tick steps of an axis of whole numbers (iterations).
  var WHOLE = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];

  // Lines over time, one per series; SERIES: [{label, x[], y[], dash?, color?}].
  // Series sampled at different times are joined on one x axis; the legend
  // shows each series' value at the sample nearest the cursor.
  function lineChart(id, title, sub, series, fmt, ylabel, xlabel, xfmt, opts) {
    opts = opts || {};
    var s = section(id, title, sub);
    var shown = [];
    series.forEach(function (r, i) {
      var x = [], y = [];
      for (var k = 0; k < r.x.length; k++) {
        if (r.x[k] == null || r.y[k] == null || (opts.logx && !(r.x[k] > 0))) continue;
        x.push(r.x[k]);
        y.push(r.y[k]);
      }
      if (x.length) shown.push({ label: r.label, x: x, y: y, dash: r.dash,
                                 color: r.color || PALETTE[i % PALETTE.length] });
    });
    if (!shown.length) return empty(s, "no samples");
    var data = uPlot.join(shown.map(function (r) { return [r.x, r.y]; }));
    // Per series, the indices where it has a value (for the nearest sample).
    var defined = data.map(function (col) {
      var out = [];
      for (var k = 0; k < col.length; k++) if (col[k] != null) out.push(k);
      return out;
    });
    function nearest(u, sidx, idx) {
      var list = defined[sidx], x = u.data[0], lo = 0, hi = list.length - 1;
      if (idx == null || !list.length) return null;
      while (lo < hi) {
        var mid = (lo + hi) >> 1;
        if (list[mid] < idx) lo = mid + 1; else hi = mid;
      }
      var best = list[lo];
      if (lo > 0 && Math.abs(x[list[lo - 1]] - x[idx]) < Math.abs(x[best] - x[idx])) best = list[lo - 1];
      return u.data[sidx][best];
    }
    var points = 0;
    shown.forEach(function (r) { points += r.x.length; });
    var uSeries = [{ label: xlabel, value: function (u, v) { return v == null ? "--" : xfmt(v); } }];
    shown.forEach(function (r) {
      uSeries.push({
        label: r.label, stroke: r.color, width: 1.6, dash: r.dash, spanGaps: true,
        points: { show: r.x.length <= 60, size: 5, fill: r.color },
        value: function (u, v, sidx, idx) {
          if (v == null) v = nearest(u, sidx, idx);
          return v == null ? "--" : fmt(v);
        }
      });
    });
    var ymax = opts.ymax;
    plot(s, id, {
      width: 520, height: 300,
      scales: {
        // As dragged: uPlot's own log range would widen a zoom to whole magnitudes.
        x: { time: false, distr: opts.logx ? 3 : 1, range: opts.logx ? function (u, min, max) { return [min, max]; } : undefined },
        // From a little below 0, so a series that stays at 0 shows above the axis.
        y: { range: function (u, min, max) {
          var top = ymax || (max > 0 ? max * 1.08 : 1);
          return [-0.03 * top, top];
        } }
      },
      axes: [axis({ label: xlabel, values: ticks(xfmt), incrs: opts.wholeX ? WHOLE : undefined }),
             axis({ label: ylabel, values: ticks(fmt), size: 64 })],
      series: uSeries
    }, data, points);
  }

  function resourceCharts(d) {
    function per(key) {
      return d.resources.map(function (r) { return { label: r.label, x: r.t, y: r[key] }; });
    }
    // Two lines per rank in the rank's color, the second dashed.
    function pair(a, b, an, bn) {
      var out = [];
      d.resources.forEach(function (r, i) {
        var color = PALETTE[i % PALETTE.length];
        out.push({ label: r.label + " " + an, x: r.t, y: r[a], color: color });
        out.push({ label: r.label + " " + bn, x: r.t, y: r[b], color: color, dash: [5, 3] });
      });
      return out;
    }
    var sub = d.resources.length ? d.resources.length + " ranks, one sample every few ms (DLTRACE_SAMPLE_MS)"
                                 : "no resource samples in this trace";
    var rate = function (v) { return fmtNum(v) + " MB/s"; };
    lineChart("res-cpu", "CPU per rank", sub, per("cpu"), function (v) { return fmtNum(v) + "%"; }, "CPU %", "time", secs);
    lineChart("res-mem", "Memory per rank", sub, per("rss_mb"), function (v) { return fmtNum(v) + " MB"; },
              "resident MB", "time", secs);
    lineChart("res-net", "Network per rank", sub + " (rx, tx dashed; loopback not counted)",
              pair("net_rx", "net_tx", "rx", "tx"), rate, "MB/s", "time", secs);
    lineChart("res-disk", "Disk per rank", sub + " (read, write dashed)",
              pair("disk_read", "disk_write", "read", "write"), rate, "MB/s", "time", secs);
  }

  function iterationsChart(d) {
    var series = d.runs.map(function (r) {
      return { label: r.label, x: r.iteration_ms.map(function (_, i) { return i; }), y: r.iteration_ms };
    });
    lineChart("iterations", "Time per iteration", d.runs.length > 1 ? "recorded vs replayed vs simulated"
              : "recorded (give --results DIR to add replayed or simulated runs)",
              series, function (v) { return fmtNum(v) + " ms"; }, "ms", "iteration", fmtNum, { wholeX: true });
  }

  function fctChart(d) {
    var series = d.fct.map(function (r) {
      return { label: r.label + " (" + r.count + " flows)", x: r.ns.map(function (v) { return v / 1e3; }),
               y: r.ns.map(function (_, i) { return r.ns.length > 1 ? i / (r.ns.length - 1) : 1; }) };
    });
    lineChart("fct", "Flow completion time CDF", "simulated flows (flows.csv)", series,
              function (v) { return v.toFixed(2); }, "fraction of flows", "flow completion time", fmtUs,
              { logx: true, ymax: 1.02 });
  }

  function queuesChart(d) {
    var series = d.queues.map(function (q) { return { label: q.label, x: q.t, y: q.bytes }; });
    lineChart("queues", "Switch egress queues", "RDMA runs: the ports with the highest peaks (queues.csv)", series,
              fmtBytes, "queue", "time", secs);
  }

  // ---- bar charts ---------------------------------------------------------

  // The x range of bars at LO..HI: half a bar beyond the outer ones in view.
  function barRange(lo, hi) {
    return function (u, min, max) { return [Math.max(min, lo) - 0.5, Math.min(max, hi) + 0.5]; };
  }

  // One bar per row: ROWS [{kind, ops?}], VALUE(row) its height. The legend
  // shows the hovered row's name (and calls) and value.
  function barChart(id, title, sub, rows, value, fmt, ylabel) {
    var s = section(id, title, sub);
    if (!rows.length) return empty(s, "no operations");
    var names = rows.map(function (r) { return r.ops === undefined ? r.kind : r.kind + " (" + r.ops + " calls)"; });
    var longest = 0;
    rows.forEach(function (r) { longest = Math.max(longest, textWidth(r.kind)); });
    plot(s, id, {
      width: 520, height: 300,
      scales: {
        x: { time: false, range: barRange(0, rows.length - 1) },
        y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.05 : 1]; } }
      },
      axes: [axis({ splits: categorySplits(rows.length, 0, 16), grid: { show: false }, rotate: -30,
                    size: Math.min(24 + longest * 0.5, 90),
                    values: function (u, splits) { return splits.map(function (i) { return rows[i] ? rows[i].kind : ""; }); } }),
             axis({ label: ylabel, values: ticks(fmt), size: 64 })],
      series: [{ label: "kind", value: function (u, i) { return i == null || !names[i] ? "--" : names[i]; } },
               { label: ylabel, fill: PALETTE[0], stroke: PALETTE[0], width: 0,
                 paths: uPlot.paths.bars({ size: [0.7, 90] }), points: { show: false },
                 value: function (u, v) { return v == null ? "--" : fmt(v); } }]
    }, [rows.map(function (_, i) { return i; }), rows.map(value)], rows.length);
  }

  // Calls per message size, one bar per power-of-two bin (empty bins too).
  function sizesChart(d) {
    var s = section("sizes", "Message sizes", "calls per size (bytes of each recorded call, power-of-two bins)");
    if (!d.sizes.length) return empty(s, "no messages");
    var counts = {};
    d.sizes.forEach(function (b) { counts[Math.round(Math.log2(b.lo))] = b.count; });
    var lo = Math.round(Math.log2(d.sizes[0].lo)), hi = Math.round(Math.log2(d.sizes[d.sizes.length - 1].lo));
    var x = [], y = [];
    for (var p = lo; p <= hi; p++) { x.push(p); y.push(counts[p] || 0); }
    plot(s, "sizes", {
      width: 520, height: 300,
      scales: {
        x: { time: false, range: barRange(lo, hi) },
        y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.05 : 1]; } }
      },
      axes: [axis({ label: "message size (bin's lower bound)", grid: { show: false },
                    splits: categorySplits(hi + 1, 0, 50),
                    values: ticks(function (v) { return fmtBytes(Math.pow(2, v)); }) }),
             axis({ label: "calls", values: ticks(fmtNum), size: 56 })],
      series: [{ label: "size", value: function (u, v) {
                   return v == null ? "--" : fmtBytes(Math.pow(2, v)) + " - " + fmtBytes(Math.pow(2, v + 1));
                 } },
               { label: "calls", fill: PALETTE[0], stroke: PALETTE[0], width: 0,
                 paths: uPlot.paths.bars({ size: [0.9, 120] }), points: { show: false },
                 value: function (u, v) { return v == null ? "--" : String(v); } }]
    }, [x, y], d.sizes.length);
  }

  // ---- traffic matrix -------------------------------------------------------

  // A heatmap of bytes, sender rows (top to bottom) by receiver columns; y
  // value n-i-1..n-i is row i. Cells smaller than a pixel are drawn as
  // blocks holding their largest value, so thousands of ranks stay fast.
  function matrixChart(d) {
    var m = d.matrix, n = m.labels.length;
    var s = section("matrix", "Traffic matrix", "bytes each rank sends each other rank, as recorded (rows: sender)");
    if (!n) return empty(s, "no ranks");
    var max = 0, nonzero = 0;
    m.bytes.forEach(function (row) { row.forEach(function (v) { max = Math.max(max, v); nonzero += v > 0; }); });
    var LEVELS = 48, EMPTY = [247, 247, 247];
    // White-blue to dark blue; the square root keeps small flows visible.
    function rgb(v) {
      if (!(v > 0)) return EMPTY;
      var a = Math.round(Math.sqrt(v / max) * LEVELS) / LEVELS;
      return [Math.round(222 - a * 214), Math.round(235 - a * 187), Math.round(247 - a * 140)];
    }
    function color(v) { return "rgb(" + rgb(v).join(",") + ")"; }
    // One image pixel per cell in view (per block of cells, as many as the
    // plot has pixels, holding the block's largest value), scaled onto the
    // plot without smoothing: one drawImage however many ranks.
    function cells(u) {
      var sx = u.scales.x, sy = u.scales.y, b = u.bbox, ctx = u.ctx;
      var j0 = Math.max(0, Math.floor(sx.min)), j1 = Math.min(n, Math.ceil(sx.max));
      var i0 = Math.max(0, Math.floor(n - sy.max)), i1 = Math.min(n, Math.ceil(n - sy.min));
      if (j1 <= j0 || i1 <= i0) return;
      var sj = Math.max(1, Math.ceil((j1 - j0) / b.width)), si = Math.max(1, Math.ceil((i1 - i0) / b.height));
      var cols = Math.ceil((j1 - j0) / sj), rows = Math.ceil((i1 - i0) / si);
      var img = document.createElement("canvas");
      img.width = cols;
      img.height = rows;
      var g = img.getContext("2d"), pixels = g.createImageData(cols, rows), px = pixels.data;
      for (var r = 0; r < rows; r++) {
        for (var c = 0; c < cols; c++) {
          var v = 0;
          for (var a = i0 + r * si; a < Math.min(i0 + (r + 1) * si, n); a++) {
            var row = m.bytes[a];
            for (var k = j0 + c * sj; k < Math.min(j0 + (c + 1) * sj, n); k++) if (row[k] > v) v = row[k];
          }
          var q = rgb(v), o = (r * cols + c) * 4;
          px[o] = q[0]; px[o + 1] = q[1]; px[o + 2] = q[2]; px[o + 3] = 255;
        }
      }
      g.putImageData(pixels, 0, 0);
      var left = u.valToPos(j0, "x", true), right = u.valToPos(j0 + cols * sj, "x", true);
      var top = u.valToPos(n - i0, "y", true), bottom = u.valToPos(n - i0 - rows * si, "y", true);
      // Clipped to the plot and to the matrix (a last, partial block stops at rank n).
      var cl = Math.max(b.left, u.valToPos(0, "x", true)), cr = Math.min(b.left + b.width, u.valToPos(n, "x", true));
      var ct = Math.max(b.top, u.valToPos(n, "y", true)), cb = Math.min(b.top + b.height, u.valToPos(0, "y", true));
      ctx.save();
      ctx.beginPath();
      ctx.rect(cl, ct, cr - cl, cb - ct);
      ctx.clip();
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(img, left, top, right - left, bottom - top);
      // Large cells get white borders between them.
      var cw = (right - left) / cols, ch = (bottom - top) / rows;
      if (sj === 1 && si === 1 && cw > 12 && ch > 12) {
        ctx.strokeStyle = "#fff";
        ctx.lineWidth = 2;
        ctx.beginPath();
        for (c = 0; c <= cols; c++) { ctx.moveTo(left + c * cw, top); ctx.lineTo(left + c * cw, bottom); }
        for (r = 0; r <= rows; r++) { ctx.moveTo(left, top + r * ch); ctx.lineTo(right, top + r * ch); }
        ctx.stroke();
      }
      ctx.restore();
    }
    var label = function (i) { return m.labels[i] === undefined ? "" : m.labels[i]; };
    var hover = "hover over a cell for its bytes; drag to zoom into a block of ranks";
    // The color scale (this chart's legend) and the hovered cell, under the plot.
    var key = html("div", s, undefined, "colorkey");
    html("span", key, "0");
    var bar = html("span", key, undefined, "ramp");
    bar.style.background = "linear-gradient(to right, " + color(max * 1e-4) + ", " + color(max / 4) + ", " + color(max) + ")";
    html("span", key, "max " + fmtBytes(max) + " (darker = more; square-root scale; grey: none)");
    var text = readout(s, hover);
    return plot(s, "matrix", {
      width: 560, height: 500, legend: { show: false },
      cursor: { drag: { x: true, y: true, uni: 30, setScale: true }, points: { show: false },
                bind: { dblclick: resetY(n) } },
      scales: {
        x: { time: false, range: function (u, min, max) { return [min, max]; } },
        y: { auto: false, range: function (u, min, max) { return min == null ? [0, n] : [min, max]; } }
      },
      axes: [axis({ label: "receiver", grid: { show: false }, splits: categorySplits(n, 0.5, 28),
                    values: ticks(function (v) { return label(Math.floor(v)); }) }),
             axis({ label: "sender", grid: { show: false }, splits: categorySplits(n, 0.5, 16), size: 56,
                    values: ticks(function (v) { return label(n - 1 - Math.floor(v)); }) })],
      series: [{}, { label: "bytes", fill: "#08306b", width: 0, points: { show: false },
                     paths: function () { return null; } }],
      hooks: {
        draw: [cells],
        setCursor: [function (u) {
          var l = u.cursor.left, t = u.cursor.top;
          if (!(l >= 0 && t >= 0)) { text.textContent = hover; return; }
          var j = Math.floor(u.posToVal(l, "x")), i = n - 1 - Math.floor(u.posToVal(t, "y"));
          if (i < 0 || j < 0 || i >= n || j >= n) { text.textContent = hover; return; }
          text.textContent = "rank " + m.labels[i] + " -> " + m.labels[j] + ": " + fmtBytes(m.bytes[i][j]);
        }]
      }
    }, [[0, n], [null, null]], nonzero);
  }

  // ---- timeline -------------------------------------------------------------

  // Operations per rank: one lane per rank (top to bottom; y value L-i-1..L-i
  // is lane i), one rectangle per op, one series per op kind (the legend
  // hides or shows a kind). Only ops in view are drawn.
  function timelineChart(d) {
    var t = d.timeline, L = t.ranks.length, K = t.kinds.length;
    var s = section("timeline", "Timeline of operations per rank",
                    t.shown < t.total ? "the earliest " + t.shown + " of " + t.total + " ops" : t.total + " ops");
    var begin = Infinity, end = -Infinity, count = 0;
    // byKind[k][i]: lane i's ops of kind k as [start, end], by start.
    var byKind = t.kinds.map(function () { return t.ranks.map(function () { return []; }); });
    t.ranks.forEach(function (r, i) {
      r.ops.forEach(function (o) {
        begin = Math.min(begin, o[0]);
        end = Math.max(end, o[0] + o[1]);
        byKind[o[2]][i].push([o[0], o[0] + o[1]]);
        count++;
      });
    });
    if (!(end >= begin)) return empty(s, "no operations");
    if (end === begin) end = begin + 1;
    byKind.forEach(function (lanes) { lanes.forEach(function (ops) { ops.sort(function (a, b) { return a[0] - b[0]; }); }); });
    // The longest op per kind, to find the first op that may reach into view.
    var longest = byKind.map(function (lanes) {
      var w = 0;
      lanes.forEach(function (ops) { ops.forEach(function (o) { w = Math.max(w, o[1] - o[0]); }); });
      return w;
    });
    function firstFrom(ops, x) {  // first op that starts at or after X
      var lo = 0, hi = ops.length;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (ops[mid][0] < x) lo = mid + 1; else hi = mid; }
      return lo;
    }
    // Lays out every shown kind's rectangles at once, pixel column by pixel
    // column: each column of a lane goes to the kind that covers most of it,
    // so dense lanes show the mix of kinds (not the last one drawn) and the
    // work is bounded by the ops and pixels in view. Cached until the view,
    // the size or the shown kinds change; each kind's series draws its part.
    var cache = { key: null, paths: [] }, cover = null;
    function layout(u) {
      var sx = u.scales.x, sy = u.scales.y, b = u.bbox;
      var shown = u.series.slice(1).map(function (r) { return r.show; });
      var key = [sx.min, sx.max, sy.min, sy.max, b.left, b.top, b.width, b.height].concat(shown).join();
      if (cache.key === key) return cache.paths;
      var W = Math.max(1, Math.ceil(b.width)), paths = t.kinds.map(function () { return new Path2D(); });
      if (!cover || cover.length < W * K) cover = new Float64Array(W * K);
      var i0 = Math.max(0, Math.floor(L - sy.max)), i1 = Math.min(L, Math.ceil(L - sy.min));
      var laneH = b.height / Math.max(sy.max - sy.min, 1e-9);
      var pad = laneH > 8 ? Math.min(2 * (window.devicePixelRatio || 1), laneH / 6) : 0;
      var perUs = b.width / Math.max(sx.max - sx.min, 1e-12);
      for (var i = i0; i < i1; i++) {
        var lo = W, hi = -1, k, c;
        for (k = 0; k < K; k++) {
          if (!shown[k]) continue;
          var ops = byKind[k][i];
          for (var a = firstFrom(ops, sx.min - longest[k]); a < ops.length && ops[a][0] <= sx.max; a++) {
            if (ops[a][1] < sx.min) continue;
            var x0 = Math.max((ops[a][0] - sx.min) * perUs, 0), x1 = Math.min((ops[a][1] - sx.min) * perUs, W);
            var c0 = Math.min(Math.floor(x0), W - 1), c1 = Math.min(Math.max(Math.ceil(x1), c0 + 1), W);
            // An op narrower than a pixel still claims some of its column.
            for (c = c0; c < c1; c++) cover[c * K + k] += Math.max(Math.min(x1, c + 1) - Math.max(x0, c), 1e-6);
            lo = Math.min(lo, c0);
            hi = Math.max(hi, c1 - 1);
          }
        }
        if (hi < 0) continue;
        var top = u.valToPos(L - i, "y", true) + pad, h = Math.max(u.valToPos(L - i - 1, "y", true) - pad - top, 1);
        var runKind = -1, runStart = lo;
        for (c = lo; c <= hi + 1; c++) {
          var best = -1, most = 0;
          if (c <= hi) for (k = 0; k < K; k++) {
            if (cover[c * K + k] > most) { most = cover[c * K + k]; best = k; }
            cover[c * K + k] = 0;
          }
          if (best !== runKind) {
            if (runKind >= 0) paths[runKind].rect(b.left + runStart, top, c - runStart, h);
            runKind = best;
            runStart = c;
          }
        }
      }
      cache.key = key;
      cache.paths = paths;
      return paths;
    }
    function rects(k) {
      return function (u) { return { fill: layout(u)[k], stroke: null, clip: null }; };
    }
    var names = t.ranks.map(function (r) { return r.label; });
    var widest = 0;
    names.forEach(function (l) { widest = Math.max(widest, textWidth(l)); });
    var hover = "hover over an operation for its kind, start and duration";
    var text = readout(s, hover);
    var series = [{ label: "time" }];
    t.kinds.forEach(function (kind, k) {
      var c = PALETTE[k % PALETTE.length];
      series.push({ label: kind, fill: c, stroke: c, width: 0, paths: rects(k), points: { show: false } });
    });
    // The op under the cursor (or the nearest within 3 pixels) of a shown kind.
    function opAt(u, l, top) {
      var i = L - 1 - Math.floor(u.posToVal(top, "y"));
      if (i < 0 || i >= L) return null;
      var x = u.posToVal(l, "x"), slack = Math.abs(u.posToVal(l + 3, "x") - x), best = null, dist = Infinity;
      for (var k = 0; k < K; k++) {
        if (!u.series[k + 1].show) continue;
        var ops = byKind[k][i];
        for (var a = firstFrom(ops, x - longest[k] - slack); a < ops.length && ops[a][0] <= x + slack; a++) {
          var dd = x < ops[a][0] ? ops[a][0] - x : x > ops[a][1] ? x - ops[a][1] : 0;
          if (dd <= slack && dd < dist) { dist = dd; best = { lane: i, kind: k, op: ops[a] }; }
        }
      }
      return best;
    }
    return plot(s, "timeline", {
      width: 1100, height: Math.min(Math.max(180, 90 + 28 * L), 640),
      legend: { live: false },
      cursor: { drag: { x: true, y: true, uni: 30, setScale: true }, points: { show: false }, y: false,
                bind: { dblclick: resetY(L) } },
      scales: {
        x: { time: false, range: function (u, min, max) { return [min, max]; } },
        y: { auto: false, range: function (u, min, max) { return min == null ? [0, L] : [min, max]; } }
      },
      axes: [axis({ label: "time since the job's first call", values: ticks(fmtUs) }),
             axis({ grid: { show: false }, splits: categorySplits(L, 0.5, 14), size: Math.min(widest + 16, 240),
                    values: ticks(function (v) { return names[L - 1 - Math.floor(v)] || ""; }) })],
      series: series,
      hooks: {
        setCursor: [function (u) {
          var l = u.cursor.left, top = u.cursor.top;
          var hit = l >= 0 && top >= 0 ? opAt(u, l, top) : null;
          text.textContent = !hit ? hover : names[hit.lane] + ": " + t.kinds[hit.kind] + " at " + fmtUs(hit.op[0]) +
                                            ", " + fmtUs(hit.op[1] - hit.op[0]);
        }]
      }
    }, [[begin, end]].concat(t.kinds.map(function () { return [null, null]; })), count);
  }

  function run() {
    var d = JSON.parse(document.getElementById("dltrace-data").textContent);
    var only = (window.location.hash.match(/chart=([A-Za-z0-9-]+)/) || [])[1];
    if (only) document.body.classList.add("solo");
    document.getElementById("summary").textContent = d.ranks + " ranks on " + d.hosts + " hosts, " +
        d.iterations + " iterations, trace " + d.trace + " (report written " + d.generated + ")";
    var notes = document.getElementById("notes");
    d.notes.forEach(function (n) { html("li", notes, n); });
    var charts = [
      ["matrix", function () { matrixChart(d); }],
      ["timeline", function () { timelineChart(d); }],
      ["kind-bytes", function () {
        barChart("kind-bytes", "Bytes per operation kind", "recorded: each operation's size once", d.kinds,
                 function (r) { return r.bytes; }, fmtBytes, "bytes");
      }],
      ["kind-time", function () {
        barChart("kind-time", "Time per operation kind", "recorded: each operation's slowest rank, summed", d.kinds,
                 function (r) { return r.time_ns / 1e3; }, fmtUs, "time");
      }],
      ["sizes", function () { sizesChart(d); }],
      ["res", function () { resourceCharts(d); }],
      ["iterations", function () { iterationsChart(d); }],
      ["fct", function () { if (d.fct.length) fctChart(d); }],
      ["queues", function () { if (d.queues && d.queues.length) queuesChart(d); }],
      ["pauses", function () {
        if (d.pauses && d.pauses.length)
          barChart("pauses", "PFC pause time", "RDMA runs: per port and priority (pfc.csv)",
                   d.pauses.map(function (r) { return { kind: r.label, us: r.us }; }),
                   function (r) { return r.us; }, fmtUs, "time paused");
      }]
    ];
    charts.forEach(function (c) {
      if (only && c[0] !== only && !(c[0] === "res" && only.indexOf("res-") === 0)) return;
      try {
        c[1]();
      } catch (e) {
        errors.push(c[0] + ": " + e.message);
      }
    });
    if (only) {
      document.querySelectorAll("section.chart").forEach(function (s) {
        if (s.id !== "chart-" + only) s.parentNode.removeChild(s);
      });
      // Fill the window: what is left of it after the title, legend and
      // readout (the plot itself may not be laid out yet: uPlot sizes it in
      // a microtask). Again when the window changes: headless Chromium
      // reaches its --window-size only after the page has loaded.
      var fit = function () {
        var u = plots[only], s = document.getElementById("chart-" + only);
        if (!u || !s) return;
        var rest = s.offsetHeight - u.root.querySelector(".u-wrap").offsetHeight;
        u.setSize({ width: window.innerWidth - 40, height: Math.max(200, window.innerHeight - rest - 24) });
      };
      fit();
      window.addEventListener("resize", fit);
    }
    drawn = document.querySelectorAll("section.chart").length;
    finish();
  }
  try {
    run();
  } catch (e) {
    errors.push(e.message);
    finish();
  }
})();
