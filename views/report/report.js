// Draws the dltrace report's charts as SVG from the embedded JSON. No
// libraries: small helpers for scales, axes and marks. A status element at
// the bottom says how many charts were drawn and any script error, which is
// what the browser test reads. "#chart=ID" in the URL draws only that chart,
// at a fixed size (what `dltrace report --png` screenshots).
(function () {
  "use strict";
  var errors = [];
  var drawn = 0;
  var NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                 "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

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

  function el(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) if (attrs.hasOwnProperty(k)) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
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
    if (us >= 1e6) return (us / 1e6).toPrecision(3) + " s";
    if (us >= 1e3) return (us / 1e3).toPrecision(3) + " ms";
    return Number(us.toPrecision(3)) + " us";
  }
  // A linear scale from [d0, d1] to [r0, r1], with ticks at round numbers.
  function linear(d0, d1, r0, r1) {
    if (!(d1 > d0)) d1 = d0 + 1;
    var f = function (v) { return r0 + (v - d0) / (d1 - d0) * (r1 - r0); };
    f.ticks = function (n) {
      var step = Math.pow(10, Math.floor(Math.log10((d1 - d0) / n)));
      var err = (d1 - d0) / n / step;
      if (err >= 7.07) step *= 10; else if (err >= 3.16) step *= 5; else if (err >= 1.41) step *= 2;
      var out = [];
      for (var t = Math.ceil(d0 / step) * step; t <= d1 + step * 1e-9; t += step) out.push(t);
      return out;
    };
    return f;
  }
  // A log10 scale, ticks at powers of ten.
  function log10(d0, d1, r0, r1) {
    var l0 = Math.log10(Math.max(d0, 1e-12)), l1 = Math.log10(Math.max(d1, d0 * 10, 1e-11));
    var f = function (v) { return r0 + (Math.log10(Math.max(v, 1e-12)) - l0) / (l1 - l0) * (r1 - r0); };
    f.ticks = function () {
      var out = [];
      for (var p = Math.ceil(l0); p <= Math.floor(l1); p++) out.push(Math.pow(10, p));
      return out;
    };
    return f;
  }

  // One chart: a section with a title, a subtitle and an SVG with a plot area.
  function frame(id, title, sub, width, height, margin) {
    var solo = document.body.classList.contains("solo");
    if (solo) { width = window.innerWidth - 24; height = window.innerHeight - 70; }
    var section = html("section", document.getElementById("charts"), undefined, "chart");
    section.id = "chart-" + id;
    html("h2", section, title);
    html("p", section, sub, "sub");
    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                          "data-chart": id, "data-marks": "0" }, section);
    var m = margin || { l: 60, r: 16, t: 10, b: 40 };
    return { svg: svg, x0: m.l, x1: width - m.r, y0: height - m.b, y1: m.t, w: width, h: height, marks: 0 };
  }
  function mark(f, tag, attrs, tip) {
    var e = el(tag, attrs, f.svg);
    if (tip) el("title", {}, e, tip);
    f.marks++;
    f.svg.setAttribute("data-marks", String(f.marks));
    return e;
  }
  function empty(f, text) {
    el("text", { x: (f.x0 + f.x1) / 2, y: (f.y0 + f.y1) / 2, "text-anchor": "middle", "class": "empty" }, f.svg, text);
  }
  function xAxis(f, x, ticks, fmt, label) {
    var g = el("g", { "class": "axis" }, f.svg);
    el("line", { x1: f.x0, x2: f.x1, y1: f.y0, y2: f.y0 }, g);
    ticks.forEach(function (t) {
      var px = x(t);
      el("line", { x1: px, x2: px, y1: f.y0, y2: f.y0 + 4 }, g);
      el("text", { x: px, y: f.y0 + 15, "text-anchor": "middle" }, g, fmt(t));
    });
    if (label) el("text", { x: (f.x0 + f.x1) / 2, y: f.h - 6, "text-anchor": "middle" }, g, label);
  }
  function yAxis(f, y, ticks, fmt, label) {
    var g = el("g", { "class": "axis" }, f.svg);
    var grid = el("g", { "class": "grid" }, f.svg);
    el("line", { x1: f.x0, x2: f.x0, y1: f.y0, y2: f.y1 }, g);
    ticks.forEach(function (t) {
      var py = y(t);
      el("line", { x1: f.x0 - 4, x2: f.x0, y1: py, y2: py }, g);
      el("line", { x1: f.x0, x2: f.x1, y1: py, y2: py }, grid);
      el("text", { x: f.x0 - 6, y: py + 4, "text-anchor": "end" }, g, fmt(t));
    });
    if (label) el("text", { x: 12, y: (f.y0 + f.y1) / 2, "text-anchor": "middle",
                            transform: "rotate(-90 12 " + (f.y0 + f.y1) / 2 + ")" }, g, label);
  }
  function legend(f, names) {
    var x = f.x0 + 8;
    names.forEach(function (n, i) {
      el("rect", { x: x, y: 4, width: 10, height: 10, fill: PALETTE[i % PALETTE.length] }, f.svg);
      el("text", { x: x + 14, y: 13 }, f.svg, n);
      x += 24 + 6.5 * n.length;
    });
  }

  function matrixChart(d) {
    var m = d.matrix, n = m.labels.length;
    var f = frame("matrix", "Traffic matrix", "bytes each rank sends each other rank, as recorded (rows: sender)",
                  600, 500, { l: 56, r: 130, t: 10, b: 46 });
    if (!n) return empty(f, "no ranks"), f;
    var size = Math.min(f.x1 - f.x0, f.y0 - f.y1), cell = size / n, max = 0;
    m.bytes.forEach(function (row) { row.forEach(function (v) { max = Math.max(max, v); }); });
    for (var i = 0; i < n; i++) for (var j = 0; j < n; j++) {
      var v = m.bytes[i][j], a = max > 0 ? Math.sqrt(v / max) : 0;
      // White-blue to dark blue; the square root keeps small flows visible.
      var fill = "rgb(" + Math.round(222 - a * 214) + "," + Math.round(235 - a * 187) + "," + Math.round(247 - a * 140) + ")";
      mark(f, "rect", { x: f.x0 + j * cell, y: f.y1 + i * cell, width: cell, height: cell,
                        fill: v > 0 ? fill : "#f7f7f7",
                        stroke: "#fff", "stroke-width": n > 32 ? 0 : 1 },
           "rank " + m.labels[i] + " -> " + m.labels[j] + ": " + fmtBytes(v));
    }
    var step = Math.ceil(n / 16);
    for (var k = 0; k < n; k += step) {
      el("text", { x: f.x0 - 6, y: f.y1 + (k + 0.5) * cell + 4, "text-anchor": "end" }, f.svg, m.labels[k]);
      el("text", { x: f.x0 + (k + 0.5) * cell, y: f.y1 + size + 14, "text-anchor": "middle" }, f.svg, m.labels[k]);
    }
    el("text", { x: f.x0 + size / 2, y: f.y1 + size + 32, "text-anchor": "middle" }, f.svg, "receiver");
    el("text", { x: f.x0 + size + 10, y: f.y1 + 12 }, f.svg, "max " + fmtBytes(max));
    el("text", { x: f.x0 + size + 10, y: f.y1 + 28 }, f.svg, "(darker = more)");
    return f;
  }

  function timelineChart(d) {
    var t = d.timeline, lanes = t.ranks.length;
    var f = frame("timeline", "Timeline of operations per rank",
                  t.shown < t.total ? "the earliest " + t.shown + " of " + t.total + " ops" : t.total + " ops",
                  1100, Math.max(140, 40 + 22 * lanes + 30), { l: 140, r: 16, t: 22, b: 40 });
    var begin = Infinity, end = -Infinity;
    t.ranks.forEach(function (r) {
      r.ops.forEach(function (o) { begin = Math.min(begin, o[0]); end = Math.max(end, o[0] + o[1]); });
    });
    if (!(end >= begin)) return empty(f, "no operations"), f;
    var x = linear(begin, end, f.x0, f.x1), lane = (f.y0 - f.y1) / Math.max(lanes, 1);
    xAxis(f, x, x.ticks(Math.max(2, Math.floor((f.x1 - f.x0) / 110))), fmtUs, "time since the job's first call");
    t.ranks.forEach(function (r, i) {
      el("text", { x: f.x0 - 6, y: f.y1 + (i + 0.5) * lane + 4, "text-anchor": "end" }, f.svg, r.label);
      r.ops.forEach(function (o) {
        mark(f, "rect", { x: x(o[0]), y: f.y1 + i * lane + 2, width: Math.max(x(o[0] + o[1]) - x(o[0]), 0.6),
                          height: Math.max(lane - 4, 2), fill: PALETTE[o[2] % PALETTE.length] },
             t.kinds[o[2]] + " at " + fmtUs(o[0]) + ", " + fmtUs(o[1]));
      });
    });
    legend(f, t.kinds);
    return f;
  }

  function barChart(id, title, sub, rows, value, fmt, label) {
    var f = frame(id, title, sub, 520, 300, { l: 70, r: 16, t: 10, b: 70 });
    if (!rows.length) return empty(f, "no operations"), f;
    var max = 0;
    rows.forEach(function (r) { max = Math.max(max, value(r)); });
    var y = linear(0, max * 1.05, f.y0, f.y1), band = Math.min((f.x1 - f.x0) / rows.length, 90);
    yAxis(f, y, y.ticks(5), fmt, label);
    rows.forEach(function (r, i) {
      var v = value(r);
      mark(f, "rect", { x: f.x0 + i * band + band * 0.15, y: y(v), width: band * 0.7, height: Math.max(f.y0 - y(v), 0.5),
                        fill: PALETTE[i % PALETTE.length] }, r.ops === undefined ? r.kind + ": " + fmt(v)
                                                                   : r.kind + ": " + fmt(v) + " in " + r.ops + " calls");
      el("text", { x: f.x0 + (i + 0.5) * band, y: f.y0 + 12, "text-anchor": "end",
                   transform: "rotate(-30 " + (f.x0 + (i + 0.5) * band) + " " + (f.y0 + 12) + ")" }, f.svg, r.kind);
    });
    return f;
  }

  function sizesChart(d) {
    var f = frame("sizes", "Message sizes", "calls per size (bytes of each recorded call, power-of-two bins)",
                  520, 300, { l: 60, r: 16, t: 10, b: 52 });
    if (!d.sizes.length) return empty(f, "no messages"), f;
    var lo = Math.log2(d.sizes[0].lo), hi = Math.log2(d.sizes[d.sizes.length - 1].lo) + 1, max = 0;
    d.sizes.forEach(function (b) { max = Math.max(max, b.count); });
    var x = linear(lo, hi, f.x0, f.x1), y = linear(0, max * 1.05, f.y0, f.y1);
    yAxis(f, y, y.ticks(5), fmtNum, "calls");
    var ticks = [];
    for (var p = Math.ceil(lo); p <= hi; p += Math.max(1, Math.ceil((hi - lo) / 8))) ticks.push(p);
    xAxis(f, x, ticks, function (p) { return fmtBytes(Math.pow(2, p)); }, "message size");
    d.sizes.forEach(function (b) {
      var p = Math.log2(b.lo);
      mark(f, "rect", { x: x(p) + 1, y: y(b.count), width: Math.max(x(p + 1) - x(p) - 2, 1),
                        height: Math.max(f.y0 - y(b.count), 0.5), fill: PALETTE[0] },
           fmtBytes(b.lo) + " - " + fmtBytes(b.lo * 2) + ": " + b.count + " calls");
    });
    return f;
  }

  // Lines over time, one per series; SERIES: [{label, x[], y[]}].
  function lineChart(id, title, sub, series, fmt, ylabel, xlabel, xfmt, logx) {
    var f = frame(id, title, sub, 520, 300, { l: 64, r: 16, t: 24, b: 40 });
    var xs = [], ys = [0];
    series.forEach(function (s) { xs = xs.concat(s.x); ys = ys.concat(s.y); });
    if (!xs.length) return empty(f, "no samples"), f;
    var xmin = Math.min.apply(null, xs), xmax = Math.max.apply(null, xs), ymax = Math.max.apply(null, ys);
    var x = logx ? log10(Math.max(xmin, 1e-9), xmax, f.x0, f.x1) : linear(xmin, xmax, f.x0, f.x1);
    var y = linear(0, ymax > 0 ? ymax * 1.08 : 1, f.y0, f.y1);
    yAxis(f, y, y.ticks(5), fmt, ylabel);
    xAxis(f, x, x.ticks(Math.max(2, Math.floor((f.x1 - f.x0) / 90))), xfmt || fmtNum, xlabel);
    series.forEach(function (s, i) {
      var dpath = "";
      for (var k = 0; k < s.x.length; k++) dpath += (k ? "L" : "M") + x(s.x[k]).toFixed(1) + "," + y(s.y[k]).toFixed(1);
      var color = PALETTE[i % PALETTE.length];
      mark(f, "path", { d: dpath, fill: "none", stroke: color, "stroke-width": 1.6 }, s.label);
      if (s.x.length <= 60) s.x.forEach(function (xv, k) {
        mark(f, "circle", { cx: x(xv), cy: y(s.y[k]), r: 2.5, fill: color }, s.label + ": " + fmt(s.y[k]));
      });
    });
    legend(f, series.map(function (s) { return s.label; }).slice(0, 8));
    return f;
  }

  function resourceCharts(d) {
    function per(key, scale) {
      return d.resources.map(function (r) {
        return { label: r.label, x: r.t, y: r[key].map(function (v) { return v * (scale || 1); }) };
      });
    }
    function pair(a, b, an, bn) {
      var out = [];
      d.resources.forEach(function (r) {
        out.push({ label: r.label + " " + an, x: r.t, y: r[a] });
        out.push({ label: r.label + " " + bn, x: r.t, y: r[b] });
      });
      return out;
    }
    var sub = d.resources.length ? d.resources.length + " ranks, one sample every few ms (DLTRACE_SAMPLE_MS)"
                                 : "no resource samples in this trace";
    var secs = function (v) { return fmtNum(v) + " s"; };
    lineChart("res-cpu", "CPU per rank", sub, per("cpu"), function (v) { return fmtNum(v) + "%"; }, "CPU %", "time", secs);
    lineChart("res-mem", "Memory per rank", sub, per("rss_mb"), function (v) { return fmtNum(v) + " MB"; }, "resident MB", "time", secs);
    lineChart("res-net", "Network per rank", sub + " (rx, tx; loopback not counted)", pair("net_rx", "net_tx", "rx", "tx"),
              function (v) { return fmtNum(v) + " MB/s"; }, "MB/s", "time", secs);
    lineChart("res-disk", "Disk per rank", sub + " (read, write)", pair("disk_read", "disk_write", "read", "write"),
              function (v) { return fmtNum(v) + " MB/s"; }, "MB/s", "time", secs);
  }

  function iterationsChart(d) {
    var series = d.runs.map(function (r) {
      return { label: r.label, x: r.iteration_ms.map(function (_, i) { return i; }), y: r.iteration_ms };
    });
    lineChart("iterations", "Time per iteration", d.runs.length > 1 ? "recorded vs replayed vs simulated"
              : "recorded (give --results DIR to add replayed or simulated runs)",
              series, function (v) { return fmtNum(v) + " ms"; }, "ms", "iteration", fmtNum);
  }

  function fctChart(d) {
    var series = d.fct.map(function (r) {
      return { label: r.label + " (" + r.count + " flows)", x: r.ns.map(function (v) { return v / 1e3; }),
               y: r.ns.map(function (_, i) { return r.ns.length > 1 ? i / (r.ns.length - 1) : 1; }) };
    });
    lineChart("fct", "Flow completion time CDF", "simulated flows (flows.csv)", series,
              function (v) { return v.toFixed(2); }, "fraction of flows", "flow completion time", fmtUs, true);
  }

  function queuesChart(d) {
    var series = d.queues.map(function (q) { return { label: q.label, x: q.t, y: q.bytes }; });
    lineChart("queues", "Switch egress queues", "RDMA runs: the ports with the highest peaks (queues.csv)", series,
              fmtBytes, "queue", "time", function (v) { return fmtNum(v) + " s"; });
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
    if (only) document.querySelectorAll("section.chart").forEach(function (s) {
      if (s.id !== "chart-" + only) s.parentNode.removeChild(s);
    });
    drawn = document.querySelectorAll("section.chart svg").length;
    finish();
  }
  try {
    run();
  } catch (e) {
    errors.push(e.message);
    finish();
  }
})();
