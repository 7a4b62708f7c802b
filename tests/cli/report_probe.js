// SPDX-License-Identifier: GPL-2.0-only
// Injected by test_report.py into a copy of a report, after the report's own
// script: drives each chart with synthetic mouse events, as a person would,
// and writes what happened as JSON into a pre element (id "probe"), which the test
// reads from Chromium's --dump-dom. Per chart: how many x values it has and
// how many plot pixels it inked, the legend values and readout line before
// and while hovering a drawn value, the x (and, for the matrix and the
// timeline, y) scale before a drag, after it and after a double-click, and
// whether the first series is shown before and after one and two clicks on
// its legend entry.
(function () {
  "use strict";
  // uPlot ignores a move while dragging that did not move (movementX/Y 0).
  function fire(target, type, x, y) {
    target.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true, view: window, button: 0,
                                                buttons: type === "mouseup" ? 0 : 1, clientX: x, clientY: y,
                                                movementX: 1, movementY: 1 }));
  }
  function shown(u) {
    var sec = u.root.closest("section");
    var values = [].map.call(u.root.querySelectorAll(".u-legend .u-value"), function (e) { return e.textContent; });
    var line = sec.querySelector(".readout");
    return { legend: values, readout: line ? line.textContent : null };
  }
  // Pixels of the plot area that something dark was drawn on (marks: lines,
  // bars, cells; not the white background or the light grid).
  function ink(u) {
    var b = u.bbox, px = u.ctx.getImageData(b.left, b.top, b.width, b.height).data, count = 0;
    for (var i = 0; i < px.length; i += 4) if (px[i + 3] > 0 && Math.min(px[i], px[i + 1], px[i + 2]) < 200) count++;
    return count;
  }
  function scale(u, key) { return [u.scales[key].min, u.scales[key].max]; }
  // Where a value is drawn, in CSS pixels from the plot area's top left.
  function target(id, u, d) {
    if (id === "matrix") {
      var n = d.matrix.labels.length, bi = 0, bj = 0;
      d.matrix.bytes.forEach(function (row, i) {
        row.forEach(function (v, j) { if (v > d.matrix.bytes[bi][bj]) { bi = i; bj = j; } });
      });
      return { x: u.valToPos(bj + 0.5, "x"), y: u.valToPos(n - bi - 0.5, "y"), cell: [bi, bj] };
    }
    if (id === "timeline") {
      // The middle of an op that no other op of its lane covers, to half a
      // pixel (ops may overlap), so what the readout names is certain.
      var t = d.timeline, lanes = t.ranks.length, px = u.posToVal(0.5, "x") - u.posToVal(0, "x");
      for (var i = 0; i < lanes; i++) {
        var ops = t.ranks[i].ops;
        for (var a = 0; a < Math.min(ops.length, 200); a++) {
          var o = ops[a], mid = o[0] + o[1] / 2;
          var alone = ops.every(function (p, b) { return b === a || p[0] > mid + px || p[0] + p[1] < mid - px; });
          if (alone) return { x: u.valToPos(mid, "x"), y: u.valToPos(lanes - i - 0.5, "y"), lane: i, op: o };
        }
      }
    }
    return { x: u.valToPos(u.data[0][0], "x"), y: u.over.clientHeight / 2 };
  }
  function drag(u, x0, y0, x1, y1) {
    var r = u.over.getBoundingClientRect();
    fire(u.over, "mousedown", r.left + x0, r.top + y0);
    fire(u.over, "mousemove", r.left + (x0 + x1) / 2, r.top + (y0 + y1) / 2);
    fire(u.over, "mousemove", r.left + x1, r.top + y1);
    fire(u.over, "mouseup", r.left + x1, r.top + y1);
  }
  // uPlot applies a new scale in a microtask: wait for it before reading.
  function later() { return new Promise(function (resolve) { setTimeout(resolve, 0); }); }
  async function probeOne(id, u, d, res) {
    var w = u.over.clientWidth, h = u.over.clientHeight, r = u.over.getBoundingClientRect();
    res.size = [w, h];
    res.n = u.data[0].length;
    res.ink = ink(u);
    res.idle = shown(u);
    var at = target(id, u, d);
    res.target = at;
    fire(u.over, "mouseenter", r.left + at.x, r.top + at.y);
    fire(u.over, "mousemove", r.left + at.x, r.top + at.y);
    await later();
    res.hover = shown(u);
    fire(u.over, "mouseleave", r.left - 5, r.top - 5);
    res.x = [scale(u, "x")];
    drag(u, w * 0.2, h / 2, w * 0.6, h / 2);
    await later();
    res.x.push(scale(u, "x"));
    if (id === "matrix" || id === "timeline") {
      res.y = [scale(u, "y")];
      drag(u, w / 2, h * 0.1, w / 2, h * 0.6);
      await later();
      res.y.push(scale(u, "y"));
    }
    fire(u.over, "dblclick", r.left + w / 2, r.top + h / 2);
    await later();
    res.x.push(scale(u, "x"));
    if (res.y) res.y.push(scale(u, "y"));
    // A click on the first series' legend entry hides it, a second shows it.
    var rows = u.root.querySelectorAll(".u-legend tr.u-series");
    var entry = rows.length ? rows[rows.length === u.series.length ? 1 : 0].querySelector("th") : null;
    if (entry) {
      res.toggle = [u.series[1].show];
      entry.dispatchEvent(new MouseEvent("click", { bubbles: true, cancelable: true, view: window, button: 0 }));
      await later();
      res.toggle.push(u.series[1].show);
      entry.dispatchEvent(new MouseEvent("click", { bubbles: true, cancelable: true, view: window, button: 0 }));
      await later();
      res.toggle.push(u.series[1].show);
    }
  }
  async function probe() {
    var d = JSON.parse(document.getElementById("dltrace-data").textContent);
    var charts = window.dltraceCharts || {}, out = {};
    for (var id of Object.keys(charts)) {
      out[id] = {};
      try {
        await probeOne(id, charts[id], d, out[id]);
      } catch (e) {
        out[id].error = String(e && e.stack || e);
      }
    }
    var pre = document.createElement("pre");
    pre.id = "probe";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  window.addEventListener("load", function () { setTimeout(probe, 0); });
})();
