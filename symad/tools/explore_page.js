// symad explore: steps through the forward pass and the reverse sweep of the data in #sx-data.
// Every number comes from the page's data (symad explain's, as text and exact digits): none is
// computed here.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("sx-data").textContent);
  var BAR = "\u0304";
  // The steps: the start, every section's forward pass (the top level, then each loop's body), every
  // section's sweep, the gathers of a loop's entries, the gradient.  A node is known by its section's
  // key and its name (a body's w3 inside the loop z2: "z2/w3"); info holds its row, its steps, its
  // sweep row and the contributions it passes on.
  var steps = [{kind: "start"}], info = {};
  function key(sec, z) { return sec.key ? sec.key + "/" + z : z; }
  D.sections.forEach(function (sec) {
    sec.rows.forEach(function (row, i) {
      if (row.el === undefined) { row.el = "sx-" + (sec.key ? sec.key + "-" : "") + row.z; }
      info[key(sec, row.z)] = {row: row, sec: sec, out: [], sweep: null, fwd: steps.length, fi: i + 1};
      steps.push({kind: "forward", sec: sec, z: row.z, i: i});
    });
  });
  D.sections.forEach(function (sec) {
    sec.sweep.forEach(function (s, i) {
      var inf = info[key(sec, s.z)];
      inf.sweep = s; inf.bwd = steps.length; inf.bi = i + 1;
      steps.push({kind: "backward", sec: sec, z: s.z, i: i});
    });
  });
  D.sections.forEach(function (sec) {
    sec.sweep.forEach(function (s) {
      s.terms.forEach(function (t, i) {
        var from = info[key(sec, t.from)];
        if (t.f === undefined) { t.f = from.sweep.d; }  // what flows in: the user's adjoint
        if (t.sum === undefined) { t.sum = t.c; }
        t.when = from.bwd;  // the step that passes it on
        from.out.push({to: s.z, term: t, index: i, of: s.terms.length});
      });
    });
  });
  (D.gathers || []).forEach(function (g) { steps.push({kind: "gather", g: g}); });
  steps.push({kind: "result"});
  var LAST = steps.length - 1, FIRST_BACK = steps.findIndex(function (st) { return st.kind === "backward"; });
  var top = D.sections[0];

  var svg = document.getElementById("sx-svg");
  var graph = document.getElementById("sx-graph");
  var elements = {};  // node key -> its <g class="node"> (drawn nodes only)
  var notes = {};  // node key -> {val, adj}: the <text> beside it
  var keyOf = {};  // element id -> node key
  Object.keys(info).forEach(function (k) {
    var row = info[k].row, el = document.getElementById(row.el);
    if (el && row.el === "sx-" + (info[k].sec.key ? info[k].sec.key + "-" : "") + row.z) {  // its own, not a box
      elements[k] = el;
      keyOf[row.el] = k;
      notes[k] = {val: addText(el, "sx-val"), adj: addText(el, "sx-adj")};
    }
  });
  var placed = false;
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
  function forwardHtml(st) {
    var sec = st.sec, row = sec.rows[st.i];
    var h = sec.note ? "<div class=\"sx-label\">" + esc(sec.note) + "</div>" : "";
    h += "<div class=\"sx-eq\" data-z=\"" + row.z + "\">" + esc(row.z) + " = ";
    if (row.expr !== row.z && !/^[0-9]/.test(row.expr)) { h += esc(row.expr) + " = "; }
    h += num(row.v, "value") + "</div>";
    if (row.full && row.full !== row.expr) { h += "<div class=\"sx-label\">" + esc(row.z) + " is " + code(row.full) + "</div>"; }
    if (row.args.length) {
      h += "<div class=\"sx-label\">from the values computed before it:</div><table>";
      row.args.forEach(function (a) {
        h += "<tr class=\"sx-arg\" data-z=\"" + a + "\"><td>" + esc(a) + "</td><td>= " + num(info[key(sec, a)].row.v) + "</td></tr>";
      });
      h += "</table>";
    } else if (row.loop) {
      h += "<div class=\"sx-label\">a loop: one step here; its body is shown after " +
        (sec === top ? "the top level" : "the body around it") + ".</div>";
    } else {
      h += "<div class=\"sx-label\">an input: its value is the point's.</div>";
    }
    if (sec === top && st.i === sec.rows.length - 1) { h += "<div class=\"sx-label\">f = " + esc(row.z) + " = " + num(row.v) + ": the forward pass is done. " +
      "Next: the backward sweep, from the output down.</div>"; }
    return h;
  }

  var MANY = 12;  // terms listed in full at a node with more users (the sum is shown whole)

  function backwardHtml(st) {
    var sec = st.sec, s = sec.sweep[st.i], inf = info[key(sec, s.z)], row = inf.row;
    var h = sec.note ? "<div class=\"sx-label\">" + esc(sec.note) + "</div>" : "";
    h += "<div class=\"sx-eq\" data-z=\"" + s.z + "\">" + esc(bar(s.z)) + " = ";
    if (s.seed) {
      h += num(s.d, "adjoint") + "</div><div class=\"sx-label\">" + (sec === top ? "the seed: \u2202f/\u2202f = 1 (" +
        esc(s.z) + " is the output)." : "the seed of the body (for 1; times the loop's adjoint for f).") + "</div>";
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
    } else if (row.loop) {
      h += "<div class=\"sx-label\">a loop: each term of its body receives " + esc(bar(s.z)) + " = " + num(s.d) +
        " (the body's sweep comes after the top level's).</div>";
    } else if (row.args.length === 0) {
      h += "<div class=\"sx-label\">an input: \u2202f/\u2202" + esc(row.expr) + " = " + num(s.d) + ".</div>";
    }
    return h;
  }

  function gatherHtml(g) {
    var h = "<div class=\"sx-label\">" + esc(g.note) + "</div><div class=\"sx-eq\" data-z=\"" + esc(g.entry) +
      "\">\u2202f/\u2202" + esc(g.entry) + " = " + (g.terms.map(function (t) { return esc(t.text); }).join(" + ") || "0") +
      "<br>&nbsp;&nbsp;= " + (g.terms.map(function (t) { return factor(t.value); }).join(" + ") || "0") +
      "<br>&nbsp;&nbsp;= " + num(g.d, "partial") + "</div>";
    return h;
  }

  function resultHtml() {
    var h = "<div class=\"sx-label\">every partial derivative, from the sweep:</div><table class=\"sx-final\">";
    D.gradient.forEach(function (p) {
      h += "<tr class=\"sx-partial\" data-var=\"" + esc(p.var) + "\"><td>\u2202f/\u2202" + esc(p.var) + "</td><td>" +
        (p.z ? "= " + esc(bar(p.z)) : "") + "</td><td>= " + num(p.d, "partial") + "</td></tr>";
    });
    return h + "</table>" + (D.gradientNote ? "<div class=\"sx-label\">" + esc(D.gradientNote) + "</div>" : "");
  }

  // ------------------------------------------------------------ the picture at a step
  var SHORT = 20;  // characters of a sum written beside a node; past them, only the sum so far
  function adjointAt(k, step) {  // node k's adjoint beside it once the steps up to step are done
    var inf = info[k], s = inf.sweep;
    if (!s || step < FIRST_BACK) { return ""; }
    var got = s.seed ? [] : s.terms.filter(function (t) { return t.when <= step; });
    if (s.seed ? inf.bwd > step : !got.length) { return ""; }
    var whole = s.seed ? inf.bwd <= step : got.length === s.terms.length;
    var sum = whole ? text(s.d) : "";  // every contribution is in: the adjoint, as the sweep summed it
    var terms = got.map(function (t) { return text(t.c); }).join(" + ");
    var line = bar(inf.row.z) + " = " + (whole ? (got.length > 1 ? terms + " = " : "") + sum : terms + " + \u2026");
    if (line.length <= SHORT) { return line; }
    return bar(inf.row.z) + " = " + (whole ? sum : text(got[got.length - 1].sum) + " + \u2026");
  }

  function paint() {
    if (!placed) { place(); }
    var st = steps[step];
    var cur = st.kind === "forward" || st.kind === "backward" ? key(st.sec, st.z) : null;
    Object.keys(elements).forEach(function (k) {
      var el = elements[k], inf = info[k];
      el.classList.toggle("sx-pending", step >= 1 && inf.fwd > step);
      el.classList.remove("sx-cur", "sx-receives", "sx-feeds");
      notes[k].val.textContent = inf.fwd <= step ? "= " + text(inf.row.v) : "";
      notes[k].adj.textContent = adjointAt(k, step);
    });
    graph.querySelectorAll(".sx-cur, g.edge.sx-active, g.edge.sx-back, g.cluster.sx-inbox").forEach(function (e) {
      e.classList.remove("sx-cur", "sx-active", "sx-back", "sx-inbox");
    });
    if (cur !== null) {
      var inf = info[cur], el = document.getElementById(inf.row.el), forward = st.kind === "forward";
      if (el) { el.classList.add("sx-cur"); scrollTo(el); }
      if (st.sec.box) { var box = document.getElementById(st.sec.box); if (box) { box.classList.add("sx-inbox"); } }
      (D.edges[inf.row.el] || []).forEach(function (id) {
        var e = document.getElementById(id);
        if (e) { e.classList.add(forward ? "sx-active" : "sx-back"); }
      });
      inf.row.args.forEach(function (a) {
        var other = elements[key(st.sec, a)];
        if (other && other !== el) { other.classList.add(forward ? "sx-feeds" : "sx-receives"); }
      });
    }
    var phase = document.getElementById("sx-phase"), body = document.getElementById("sx-step");
    phase.className = st.kind === "forward" ? "sx-forward" : st.kind === "start" ? "" : "sx-backward";
    body.setAttribute("data-step", step);
    body.setAttribute("data-phase", st.kind === "gather" ? "gather" : st.kind);
    var where = st.sec && st.sec.title ? ", " + st.sec.title : "";
    if (st.kind === "start") {
      phase.textContent = "start";
      body.innerHTML = "<div class=\"sx-label\">" + top.rows.length + " nodes, numbers aside" +
        (D.sections.length > 1 ? ", and the body of each loop" : "") + ". Next: the forward pass computes each " +
        "node's value from its arguments', inputs first.</div>";
    } else if (st.kind === "forward") {
      phase.textContent = "forward pass" + where + ": node " + (st.i + 1) + " of " + st.sec.rows.length;
      body.innerHTML = forwardHtml(st);
    } else if (st.kind === "backward") {
      phase.textContent = "backward sweep" + where + ": node " + (st.i + 1) + " of " + st.sec.sweep.length;
      body.innerHTML = backwardHtml(st);
    } else if (st.kind === "gather") {
      phase.textContent = "gather: the partial along an entry";
      body.innerHTML = gatherHtml(st.g);
    } else {
      phase.textContent = "the gradient";
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
    var inf = info[keyOf[id]];
    if (!inf) { return ""; }
    var row = inf.row, z = row.z, h = "<b>" + esc(z) + "</b> = " + code(row.expr);
    if (row.full && row.full !== row.expr) { h += " = " + code(row.full); }
    if (inf.sec.title) { h += "<br><i>" + esc(inf.sec.title) + "</i>"; }
    h += "<br>value " + num(row.v, "value") + " <i>(forward step " + inf.fi + ")</i>";
    if (inf.sweep) {
      h += "<br>adjoint \u2202f/\u2202" + esc(z) + " = " + num(inf.sweep.d, "adjoint") + " <i>(backward step " + inf.bi +
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
