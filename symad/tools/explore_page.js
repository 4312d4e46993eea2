// symad explore: steps through the forward pass and the reverse sweep of the data in #sx-data.
// Every number comes from the page's data (symad explain's, as text and exact digits): none is
// computed here.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("sx-data").textContent);
  var R = D.rows.length, S = D.sweep.length, LAST = R + S + 1;
  var BAR = "\u0304";
  var info = {};  // z name -> {row, fwd step, sweep row, bwd step, out: contributions it passes on}
  D.rows.forEach(function (row, i) { info[row.z] = {row: row, fwd: i + 1, out: [], sweep: null, bwd: null}; });
  D.sweep.forEach(function (s, k) {
    info[s.z].sweep = s; info[s.z].bwd = R + 1 + k; info[s.z].at = k;
  });
  D.sweep.forEach(function (s) {
    s.terms.forEach(function (t, i) {
      if (t.f === undefined) { t.f = info[t.from].sweep.d; }  // what flows in: the user's adjoint
      if (t.sum === undefined) { t.sum = t.c; }
      info[t.from].out.push({to: s.z, term: t, index: i, of: s.terms.length});
    });
  });
  D.rows.forEach(function (row) { if (row.el === undefined) { row.el = "sx-" + row.z; } });

  var svg = document.getElementById("sx-svg");
  var graph = document.getElementById("sx-graph");
  var elements = {};  // z name -> its <g class="node"> (drawn nodes only)
  var notes = {};  // z name -> {val, adj}: the <text> beside it
  D.rows.forEach(function (row) {
    var el = document.getElementById(row.el);
    if (el && row.el === "sx-" + row.z) {
      elements[row.z] = el;
      notes[row.z] = {val: addText(el, "sx-val"), adj: addText(el, "sx-adj")};
    }
  });
  var placed = false;
  var boxes = Object.keys(D.boxes).map(function (id) { return document.getElementById(id); });
  var step = 0;

  function addText(el, cls) {
    var t = document.createElementNS("http://www.w3.org/2000/svg", "text");
    t.setAttribute("class", cls);
    el.appendChild(t);
    return t;
  }

  function place() {  // the numbers beside their nodes, once the picture is laid out (a frame may not be yet)
    Object.keys(notes).forEach(function (z) {
      var shape = elements[z].querySelector("ellipse, polygon, path");
      var box = (shape || elements[z]).getBBox();
      if (box.width > 0) { placed = true; }
      notes[z].val.setAttribute("x", box.x + box.width + 4);
      notes[z].val.setAttribute("y", box.y + box.height / 2 - 2);
      notes[z].adj.setAttribute("x", box.x + box.width + 4);
      notes[z].adj.setAttribute("y", box.y + box.height / 2 + 12);
    });
  }

  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;"}[c]; });
  }
  function text(n) { return n.split("|")[0]; }  // a number as shown by symad explain
  function num(n, role) {  // ... with its exact digits in data-exact
    var parts = n.split("|");
    return "<span class=\"sx-num\"" + (role ? " data-role=\"" + role + "\"" : "") + " data-exact=\"" +
      esc(parts[parts.length - 1]) + "\">" + esc(parts[0]) + "</span>";
  }
  function factor(n, role) {
    return n.charAt(0) === "-" ? "(" + num(n, role) + ")" : num(n, role);
  }
  function bar(z) { return z.charAt(0) + BAR + z.slice(1); }
  function code(s) { return "<code>" + esc(s) + "</code>"; }

  // ------------------------------------------------------------ the step's panel
  function forwardHtml(k) {
    var row = D.rows[k - 1], inf = info[row.z];
    var h = "<div class=\"sx-eq\" data-z=\"" + row.z + "\">" + esc(row.z) + " = ";
    if (row.expr !== row.z && !/^[0-9]/.test(row.expr)) { h += esc(row.expr) + " = "; }
    h += num(row.v, "value") + "</div>";
    if (row.full && row.full !== row.expr) { h += "<div class=\"sx-label\">" + esc(row.z) + " is " + code(row.full) + "</div>"; }
    if (row.args.length) {
      h += "<div class=\"sx-label\">from the values computed before it:</div><table>";
      row.args.forEach(function (a) {
        h += "<tr class=\"sx-arg\" data-z=\"" + a + "\"><td>" + esc(a) + "</td><td>= " + num(info[a].row.v) + "</td></tr>";
      });
      h += "</table>";
    } else {
      h += "<div class=\"sx-label\">an input: its value is the point's.</div>";
    }
    if (k === R) { h += "<div class=\"sx-label\">f = " + esc(row.z) + " = " + num(row.v) + ": the forward pass is done. " +
      "Next: the backward sweep, from the output down.</div>"; }
    return h;
  }

  var MANY = 12;  // terms listed in full at a node with more users (the sum is shown whole)

  function backwardHtml(k) {
    var s = D.sweep[k], inf = info[s.z], row = inf.row, h;
    h = "<div class=\"sx-eq\" data-z=\"" + s.z + "\">" + esc(bar(s.z)) + " = ";
    if (s.seed) {
      h += num(s.d, "adjoint") + "</div><div class=\"sx-label\">the seed: \u2202f/\u2202f = 1 (" + esc(s.z) +
        " is the output).</div>";
    } else {
      var shown = s.terms.slice(0, MANY), more = s.terms.length > MANY ? " + \u2026 (" + (s.terms.length - MANY) +
        " more terms)" : "";
      h += shown.map(function (t) { return esc(bar(t.from)) + "\u00b7" + esc(t.local); }).join(" + ") + more +
        "<br>&nbsp;&nbsp;= ";
      h += shown.map(function (t) {
        return t.blocked ? "0 (branch not taken)" : factor(t.f) + "\u00b7" + factor(t.p);
      }).join(" + ") + more + "<br>&nbsp;&nbsp;= " + num(s.d, "adjoint") + "</div>";
      h += "<div class=\"sx-label\">\u2202f/\u2202" + esc(s.z) + (row.full ? ", " + esc(s.z) + " = " + code(row.full) : "") +
        ": what its users passed back.</div>";
      if (s.terms.length > 1) {
        h += "<div class=\"sx-shared\">" + esc(s.z) + " is shared: " + s.terms.length +
          " users each passed a contribution, summed as they came:<table>";
        s.terms.forEach(function (t, i) {
          if (i >= MANY && i < s.terms.length - 1) { return; }  // the first ones, and the last with the total
          if (i === s.terms.length - 1 && i > MANY) {
            h += "<tr><td colspan=\"3\">\u2026 " + (s.terms.length - 1 - MANY) + " more contributions</td></tr>";
          }
          h += "<tr class=\"sx-term\" data-from=\"" + t.from + "\"><td>from " + esc(t.from) + "</td><td>" +
            (t.blocked ? "0 (branch not taken)" : factor(t.f) + "\u00b7" + factor(t.p) + " = " + num(t.c, "contribution")) +
            "</td><td>running sum " + num(t.sum, "sum") + "</td></tr>";
        });
        h += "</table></div>";
      } else {
        s.terms.forEach(function (t) {
          h += "<table><tr class=\"sx-term\" data-from=\"" + t.from + "\"><td>from " + esc(t.from) + "</td><td>" +
            num(t.c, "contribution") + "</td></tr></table>";
        });
      }
    }
    if (inf.out.length) {
      h += "<div class=\"sx-label\">" + esc(s.z) + " passes on (its adjoint \u00d7 the local partial):</div><table>";
      inf.out.forEach(function (o) {
        var t = o.term;
        h += "<tr class=\"sx-pass\" data-to=\"" + o.to + "\"><td>to " + esc(o.to) + "</td><td>" + esc(bar(s.z)) + "\u00b7" +
          esc(t.local) + " = " + (t.blocked ? "0 (branch not taken)" : factor(t.f) + "\u00b7" + factor(t.p) + " = " +
          num(t.c, "contribution")) + "</td><td>" + esc(bar(o.to)) + (o.index + 1 < o.of ? " so far " : " = ") +
          num(t.sum, "sum") + (o.of > 1 ? " (" + (o.index + 1) + " of " + o.of + ")" : "") + "</td></tr>";
      });
      h += "</table>";
    } else if (row.args.length === 0) {
      h += "<div class=\"sx-label\">an input: \u2202f/\u2202" + esc(row.expr) + " = " + num(s.d) + ".</div>";
    }
    return h;
  }

  function resultHtml() {
    var h = "<div class=\"sx-label\">every partial derivative, from the sweep:</div><table class=\"sx-final\">";
    D.gradient.forEach(function (p) {
      h += "<tr class=\"sx-partial\" data-var=\"" + esc(p.var) + "\"><td>\u2202f/\u2202" + esc(p.var) + "</td><td>= " +
        esc(bar(p.z)) + "</td><td>= " + num(p.d, "partial") + "</td></tr>";
    });
    return h + "</table>";
  }

  // ------------------------------------------------------------ the picture at a step
  var SHORT = 20;  // characters of a sum written beside a node; past them, only the sum so far
  function adjointAt(z, k) {  // z's adjoint beside its node once the sweep has done rows 0..k
    var s = info[z].sweep;
    if (!s) { return ""; }
    var got = s.seed ? [] : s.terms.filter(function (t) { return t.at <= k; });
    if (!s.seed && !got.length) { return ""; }
    var whole = s.seed ? info[z].at <= k : got.length === s.terms.length;
    var sum = whole ? text(s.d) : "";  // every contribution is in: the adjoint, as the sweep summed it
    var terms = got.map(function (t) { return text(t.c); }).join(" + ");
    var line = bar(z) + " = " + (whole ? (got.length > 1 ? terms + " = " : "") + sum : terms + " + \u2026");
    if (line.length <= SHORT) { return line; }
    return bar(z) + " = " + (whole ? sum : text(got[got.length - 1].sum) + " + \u2026");
  }

  function paint() {
    if (!placed) { place(); }
    var k = step - R - 1;  // the sweep row of a backward step (or past it)
    var cur = step >= 1 && step <= R ? D.rows[step - 1].z : k >= 0 && k < S ? D.sweep[k].z : null;
    var sweepDone = step > R + S ? S : k;
    Object.keys(elements).forEach(function (z) {
      var el = elements[z], inf = info[z];
      el.classList.toggle("sx-pending", step >= 1 && inf.fwd > step);
      el.classList.remove("sx-cur", "sx-receives", "sx-feeds");
      notes[z].val.textContent = inf.fwd <= step ? "= " + text(inf.row.v) : "";
      notes[z].adj.textContent = step > R ? adjointAt(z, sweepDone) : "";
    });
    boxes.forEach(function (b) { b.classList.remove("sx-cur"); });
    graph.querySelectorAll("g.edge.sx-active, g.edge.sx-back").forEach(function (e) {
      e.classList.remove("sx-active", "sx-back");
    });
    if (cur !== null) {
      var el = document.getElementById(info[cur].row.el);
      if (el) { el.classList.add("sx-cur"); scrollTo(el); }
      var forward = step <= R;
      (D.edges[cur] || []).forEach(function (id) {
        var e = document.getElementById(id);
        if (e) { e.classList.add(forward ? "sx-active" : "sx-back"); }
      });
      info[cur].row.args.forEach(function (a) {
        if (elements[a] && a !== cur) { elements[a].classList.add(forward ? "sx-feeds" : "sx-receives"); }
      });
    }
    var phase = document.getElementById("sx-phase"), body = document.getElementById("sx-step");
    phase.className = step === 0 ? "" : step <= R ? "sx-forward" : "sx-backward";
    body.setAttribute("data-step", step);
    if (step === 0) {
      phase.textContent = "start";
      body.setAttribute("data-phase", "start");
      body.innerHTML = "<div class=\"sx-label\">" + R + " nodes, numbers aside. Next: the forward pass computes each " +
        "node's value from its arguments', inputs first.</div>";
    } else if (step <= R) {
      phase.textContent = "forward pass: node " + step + " of " + R;
      body.setAttribute("data-phase", "forward");
      body.innerHTML = forwardHtml(step);
    } else if (k < S) {
      phase.textContent = "backward sweep: node " + (k + 1) + " of " + S;
      body.setAttribute("data-phase", "backward");
      body.innerHTML = backwardHtml(k);
    } else {
      phase.textContent = "the gradient";
      body.setAttribute("data-phase", "result");
      body.innerHTML = resultHtml();
    }
    document.getElementById("sx-count").textContent = "step " + step + " of " + LAST;
    document.getElementById("sx-slider").value = step;
    document.getElementById("sx-back").disabled = step === 0;
    document.getElementById("sx-next").disabled = step === LAST;
  }

  function scrollTo(el) {
    if (graph.scrollHeight > graph.clientHeight || graph.scrollWidth > graph.clientWidth) {
      el.scrollIntoView({block: "nearest", inline: "nearest"});
    }
  }

  function go(to) {
    step = Math.max(0, Math.min(LAST, to));
    paint();
  }

  // ------------------------------------------------------------ details of a node
  var tip = document.getElementById("sx-tip"), pinned = null;
  function details(id) {
    if (D.boxes[id]) {
      var m = D.boxes[id];
      return "<b>collapsed</b>: " + m.length + " nodes (" + esc(m.slice(0, 6).join(", ")) + (m.length > 6 ? ", \u2026" : "") +
        "); the steps go through each of them.";
    }
    var z = id.slice(3), inf = info[z];
    if (!inf) { return ""; }
    var row = inf.row, h = "<b>" + esc(z) + "</b> = " + code(row.expr);
    if (row.full && row.full !== row.expr) { h += " = " + code(row.full); }
    h += "<br>value " + num(row.v, "value") + " <i>(forward step " + inf.fwd + ")</i>";
    if (inf.sweep) {
      h += "<br>adjoint \u2202f/\u2202" + esc(z) + " = " + num(inf.sweep.d, "adjoint") + " <i>(backward step " + (inf.at + 1) +
        (inf.sweep.terms.length > 1 ? ", the sum of " + inf.sweep.terms.length + " contributions" : "") + ")</i>";
    } else {
      h += "<br>adjoint: not reached by the sweep (f does not depend on it)";
    }
    h += "<br><button type=\"button\" data-go=\"" + inf.fwd + "\">go to forward step</button>";
    if (inf.sweep) { h += "<button type=\"button\" data-go=\"" + inf.bwd + "\">go to backward step</button>"; }
    return h;
  }
  function show(node, x, y) {
    tip.innerHTML = details(node.id);
    tip.setAttribute("data-node", node.id);
    tip.hidden = false;
    var w = tip.offsetWidth, hgt = tip.offsetHeight;
    tip.style.left = Math.max(4, Math.min(window.innerWidth - w - 4, x + 12)) + "px";
    tip.style.top = Math.max(4, Math.min(window.innerHeight - hgt - 4, y + 12)) + "px";
  }
  graph.querySelectorAll("g.node").forEach(function (node) {
    node.addEventListener("mouseenter", function (e) { if (!pinned) { show(node, e.clientX, e.clientY); } });
    node.addEventListener("mouseleave", function () { if (!pinned) { tip.hidden = true; } });
    node.addEventListener("click", function (e) {
      e.stopPropagation();
      pinned = node;
      show(node, e.clientX, e.clientY);
    });
  });
  tip.addEventListener("click", function (e) {
    var to = e.target.getAttribute && e.target.getAttribute("data-go");
    if (to) { go(parseInt(to, 10)); }
    e.stopPropagation();
  });
  document.addEventListener("click", function () { pinned = null; tip.hidden = true; });

  // ------------------------------------------------------------ controls
  document.getElementById("sx-back").addEventListener("click", function () { go(step - 1); });
  document.getElementById("sx-next").addEventListener("click", function () { go(step + 1); });
  var slider = document.getElementById("sx-slider");
  slider.max = LAST;
  slider.addEventListener("input", function () { go(parseInt(slider.value, 10)); });
  document.addEventListener("keydown", function (e) {
    if (e.target === slider || e.altKey || e.ctrlKey || e.metaKey) { return; }
    var to = {ArrowRight: step + 1, ArrowDown: step + 1, ArrowLeft: step - 1, ArrowUp: step - 1, Home: 0, End: LAST}[e.key];
    if (to !== undefined) { e.preventDefault(); go(to); }
  });
  var zoom = document.getElementById("sx-zoom");
  var wide = svg.viewBox.baseVal.width * 4 / 3, tall = svg.viewBox.baseVal.height * 4 / 3;  // points to pixels
  function fit(on) {
    graph.classList.toggle("sx-fit", on);
    var room = Math.min(window.innerHeight - graph.getBoundingClientRect().top - 12,  // the picture whole in the window
                        graph.getBoundingClientRect().height > 0 ? 0.88 * window.innerHeight - 8 : Infinity);
    svg.style.width = (on ? Math.max(120, Math.min(wide * 1.5, graph.clientWidth - 2, room * wide / tall)) : wide) + "px";
    zoom.textContent = on ? "full size" : "fit";
  }
  zoom.addEventListener("click", function () { fit(!graph.classList.contains("sx-fit")); });
  var fitted = false;
  function layout() {  // once the page has a size (a frame gets it after its script may have run)
    if (graph.clientWidth > 0 && !fitted) {
      fitted = true;
      fit(wide <= 2.5 * graph.clientWidth && tall <= 2.5 * window.innerHeight);
    } else if (fitted && graph.classList.contains("sx-fit")) {
      fit(true);
    }
    if (!placed) { place(); }
  }
  window.addEventListener("resize", layout);
  window.addEventListener("load", layout);
  layout();

  document.getElementById("sx-at").textContent = D.at ? "at " + D.at : "";
  document.getElementById("sx-notes").textContent = D.notes.join(" ");
  document.body.setAttribute("data-ready", "1");
  go(0);
})();
