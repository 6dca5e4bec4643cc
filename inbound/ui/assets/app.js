// The bridge run inspector: hash-routed pages over /ui/api/. No framework,
// no build: every element is made with el(), every text set as text.
"use strict";

const DIALECTS = ["openai", "responses", "anthropic", "a2a", "adk", "hermes", "echo"];
const STATUSES = ["running", "completed", "failed", "cancelled", "interrupted", "input_required"];
let gen = 0; // the route's generation: a page of an older one neither shows nor refreshes

// every runs f each ms while route my is the current one.
function every(my, f, ms) {
  if (my !== gen) return;
  const id = setInterval(() => { if (my !== gen) clearInterval(id); else f(id); }, ms);
}

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "text") e.textContent = v;
    else if (k === "style") Object.assign(e.style, v); // CSSOM: inline style attributes are refused by the CSP
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

const key = () => sessionStorage.getItem("bridge-key") || "";

class APIError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

async function api(path, opts) {
  const headers = { "Accept": "application/json" };
  if (key()) headers["Authorization"] = "Bearer " + key();
  if (opts && opts.body) headers["Content-Type"] = "application/json";
  const res = await fetch("/ui/api/" + path, Object.assign({ headers }, opts || {}));
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const e = body.error || {};
    throw new APIError(res.status, e.message || res.statusText);
  }
  return body;
}

function fmtTime(s) {
  if (!s) return "–";
  const d = new Date(s);
  return d.toLocaleString(undefined, { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}
const fmtMS = (v) => (v === null || v === undefined) ? "–" : v.toFixed(1) + " ms";
function duration(r) {
  if (!r.finished_at) return r.status === "running" ? "running" : "–";
  return fmtMS(new Date(r.finished_at) - new Date(r.created_at));
}
function usage(u) {
  if (!u) return "–";
  const parts = [];
  for (const [k, n] of [["input_tokens", "in"], ["output_tokens", "out"], ["reasoning_tokens", "reasoning"], ["cache_read_tokens", "cache read"], ["total_tokens", "total"]]) {
    if (u[k] !== undefined && u[k] !== null) parts.push(n + " " + u[k]);
  }
  return parts.length ? parts.join(", ") : "–";
}
function total(u) {
  if (!u) return "–";
  if (u.total_tokens != null) return u.total_tokens;
  if (u.input_tokens != null || u.output_tokens != null) return (u.input_tokens || 0) + (u.output_tokens || 0);
  return "–";
}
const badge = (status) => el("span", { class: "badge s-" + status, "data-status": status, text: status });
const runLink = (id) => el("a", { href: "#/run/" + encodeURIComponent(id), class: "mono", text: id });
// A session is named by its principal and id (an admin sees several principals').
const sessQuery = (principal) => principal ? "?principal=" + encodeURIComponent(principal) : "";
const sessLink = (id, principal) => el("a", { href: "#/session/" + encodeURIComponent(id) + sessQuery(principal), class: "mono", text: id });

function show(...kids) {
  const main = document.getElementById("main");
  main.replaceChildren(...kids);
}

function showError(err) {
  if (err instanceof APIError && (err.status === 401 || err.status === 403)) return login(err.message);
  show(el("p", { class: "error", id: "error", text: String(err.message || err) }));
}

function login(msg) {
  const input = el("input", { type: "password", id: "key", placeholder: "admin key", autocomplete: "off" });
  const form = el("form", { class: "card login", id: "login", onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem("bridge-key", input.value.trim());
    route();
  } },
    el("h1", { text: "Sign in" }),
    el("p", { class: "muted", text: "This bridge has keys. Give an admin key to see every run, or your own key to see your runs." }),
    msg ? el("p", { class: "error", id: "login-error", text: msg }) : null,
    input, el("button", { type: "submit", id: "key-submit", text: "Open the inspector" }));
  show(form);
  input.focus();
}

async function whoami() {
  const me = await api("me");
  document.getElementById("who").textContent = me.admin ? (me.principal ? "admin (" + me.principal + ")" : "admin (no keys, loopback)") : "principal " + me.principal;
  document.getElementById("signout").hidden = !key();
  return me;
}

// ---- runs list ----

function listQuery() {
  const q = new URLSearchParams(location.hash.split("?")[1] || "");
  return q;
}

async function runsPage() {
  const my = gen;
  const q = listQuery();
  const sel = (name, opts) => el("label", {}, name,
    el("select", { name, id: "f-" + name }, el("option", { value: "", text: "any" }),
      opts.map((o) => el("option", { value: o, text: o, selected: q.get(name) === o }))));
  const inp = (name, ph) => el("label", {}, name, el("input", { name, id: "f-" + name, placeholder: ph, value: q.get(name) || "", size: 14 }));
  const since = el("label", {}, "since", el("select", { name: "since", id: "f-since" },
    [["", "any time"], ["15m", "15 min"], ["1h", "1 hour"], ["24h", "24 hours"], ["168h", "7 days"]].map(([v, t]) =>
      el("option", { value: v, text: t, selected: (q.get("since") || "") === v }))));
  const form = el("form", { class: "filters", onsubmit: (e) => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) p.set(k, v);
    location.hash = "#/runs?" + p.toString();
  } }, sel("status", STATUSES), sel("inbound", DIALECTS), sel("outbound", DIALECTS), inp("model", "any"), inp("session", "any"), since,
    el("button", { type: "submit", text: "Filter" }),
    el("button", { type: "button", class: "secondary", onclick: () => { location.hash = "#/runs"; }, text: "Clear" }));
  const live = el("input", { type: "checkbox", id: "live", checked: !q.get("before") });
  const tbody = el("tbody");
  const table = el("table", { id: "runs-table" }, el("thead", {}, el("tr", {},
    ["created", "run", "session", "status", "dialects", "model", "duration", "tokens"].map((h) => el("th", { text: h, class: h === "tokens" || h === "duration" ? "num" : null })))), tbody);
  const pager = el("div", { class: "pager" });
  show(el("h1", {}, "Runs", el("label", { class: "muted live-toggle" }, live, " live")), form, table, pager);

  const load = async () => {
    const p = new URLSearchParams(q);
    p.set("limit", "50");
    const page = await api("runs?" + p.toString());
    tbody.replaceChildren(...page.runs.map((r) => el("tr", { "data-run": r.id },
      el("td", { class: "mono", text: fmtTime(r.created_at) }), el("td", {}, runLink(r.id)), el("td", {}, sessLink(r.session_id, r.principal)),
      el("td", {}, badge(r.status)),
      el("td", { class: "mono" }, r.inbound, el("span", { class: "arrow", text: " → " }), r.outbound),
      el("td", { text: r.model || "–" }), el("td", { class: "num", text: duration(r) }), el("td", { class: "num", text: total(r.usage) }))));
    if (!page.runs.length) tbody.append(el("tr", {}, el("td", { colspan: 8, class: "muted", id: "no-runs", text: "No runs match." })));
    const kids = [];
    if (q.get("before")) {
      const first = new URLSearchParams(q); first.delete("before");
      kids.push(el("a", { href: "#/runs?" + first.toString(), text: "← Newest" }));
    }
    if (page.next) {
      const next = new URLSearchParams(q); next.set("before", page.next);
      kids.push(el("a", { href: "#/runs?" + next.toString(), id: "older", text: "Older →" }));
    }
    pager.replaceChildren(...kids);
  };
  await load();
  every(my, () => { if (live.checked) load().catch(() => {}); }, 2000);
}

// ---- one run ----

function eventDetail(ev) {
  const parts = [];
  if (ev.text) parts.push(JSON.stringify(ev.text));
  if (ev.tool_call) parts.push((ev.tool_call.name || "") + (ev.tool_call.id ? " " + ev.tool_call.id : "") + (ev.tool_call.arguments ? " " + ev.tool_call.arguments : ""));
  if (ev.tool_result) parts.push("result of " + ev.tool_result.call_id + (ev.tool_result.is_error ? " (error)" : ""));
  if (ev.message) parts.push(ev.message.role + ": " + msgText(ev.message));
  if (ev.usage) parts.push(usage(ev.usage));
  if (ev.error) parts.push(ev.error.code + ": " + ev.error.message);
  if (ev.final) parts.push(ev.final.status + (ev.final.stop_reason ? " (" + ev.final.stop_reason + ")" : "") + (ev.final.error ? " " + ev.final.error.code + ": " + ev.final.error.message : ""));
  if (ev.model) parts.push("model " + ev.model);
  return parts.join(" · ");
}

function msgText(m) {
  return (m.parts || []).map((p) => p.text !== undefined ? p.text : p.json ? JSON.stringify(p.json) : "[" + p.type + "]").join("");
}

// foldEvents merges runs of deltas of one kind and index into one row.
function foldEvents(events) {
  const rows = [];
  for (const ev of events) {
    const last = rows[rows.length - 1];
    const delta = ev.kind === "text_delta" || ev.kind === "reasoning_delta" || ev.kind === "tool_call_delta";
    if (delta && last && last.kind === ev.kind && last.index === ev.index && last.n) {
      last.n++; last.toSeq = ev.seq; last.toTime = ev.time;
      last.text = (last.text || "") + (ev.text || "");
      if (ev.tool_call && last.tool_call) last.tool_call = Object.assign({}, last.tool_call, { arguments: (last.tool_call.arguments || "") + (ev.tool_call.arguments || "") });
      continue;
    }
    rows.push(Object.assign({}, ev, delta ? { n: 1 } : {}));
  }
  return rows;
}

function toolCalls(events) {
  const calls = [], byID = {};
  for (const ev of events) {
    if (ev.kind === "tool_call_done" && ev.tool_call) {
      byID[ev.tool_call.id] = { id: ev.tool_call.id, name: ev.tool_call.name, args: ev.tool_call.arguments || "", result: null };
      calls.push(byID[ev.tool_call.id]);
    }
    if (ev.kind === "tool_result" && ev.tool_result && byID[ev.tool_result.call_id]) {
      const r = ev.tool_result;
      byID[r.call_id].result = (r.is_error ? "error: " : "") + (r.content || []).map((p) => p.text !== undefined ? p.text : JSON.stringify(p)).join("");
    }
  }
  return calls;
}

function prettyBody(body) {
  try { return JSON.stringify(JSON.parse(body), null, 2); } catch (_) { return body; }
}

function renderRun(p, root) {
  const r = p.run, created = new Date(r.created_at);
  const off = (t) => t ? (new Date(t) - created) : null;
  const field = (label, value, id) => el("div", {}, el("span", { text: label }), el("b", { id, text: value === "" || value == null ? "–" : value }));
  const kids = [];
  kids.push(el("h1", {}, "Run ", el("span", { class: "mono", text: r.id }), el("span", { id: "run-status" }, badge(r.status)),
    el("span", { class: "mono", id: "run-dialects" }, r.inbound, el("span", { class: "arrow", text: " → " }), r.outbound)));
  kids.push(el("div", { class: "card grid", id: "run-header" },
    field("session", null) && el("div", {}, el("span", { text: "session" }), sessLink(r.session_id, r.principal)),
    field("model", r.model), field("upstream", r.upstream), field("principal", r.principal || "(none)"),
    field("usage", usage(r.usage), "run-usage"), field("trace id", r.trace_id), field("upstream run id", r.upstream_run_id),
    field("created", fmtTime(r.created_at)), field("finished", r.finished_at ? fmtTime(r.finished_at) : "–"),
    field("duration", duration(r)), field("stop reason", r.stop_reason), field("reason", r.reason), field("events", String(r.last_seq), "run-seq")));
  if (r.status === "running") {
    const input = el("input", { id: "steer-input", placeholder: "steer: add user input to the running run" });
    const note = el("span", { class: "muted", id: "live-note" });
    kids.push(el("div", { class: "live-controls" },
      el("button", { class: "danger", id: "stop", onclick: async (e) => {
        e.target.disabled = true;
        try { await api("runs/" + encodeURIComponent(r.id) + "/stop", { method: "POST" }); liveNote("stopped"); } catch (err) { liveNote(err.message); }
        refresh();
      }, text: "Stop" }),
      input,
      el("button", { class: "secondary", id: "steer-send", onclick: async () => {
        if (!input.value) return;
        const text = input.value;
        // The page is drawn again as events come: the note and the input
        // are found afresh when the answer is in.
        try { await api("runs/" + encodeURIComponent(r.id) + "/steer", { method: "POST", body: JSON.stringify({ input: text }) }); liveNote("steer sent"); const i = document.getElementById("steer-input"); if (i && i.value === text) i.value = ""; } catch (err) { liveNote(err.message); }
      }, text: "Steer" }), note));
  }

  // waterfall
  const end = Math.max(1, ...p.waterfall.map((m) => m.ms || 0));
  kids.push(el("h2", { text: "Latency" }), el("div", { class: "card waterfall", id: "waterfall" }, p.waterfall.map((m) => el("div", { class: "row", "data-mark": m.name },
    el("span", { text: m.name }), el("div", { class: "track" }, m.ms == null ? null : el("div", { class: "bar", style: { width: (100 * m.ms / end).toFixed(2) + "%" } })),
    el("span", { class: "num mono", text: m.ms != null ? fmtMS(m.ms) : r.status === "running" ? "running" : "not recorded" })))));

  kids.push(el("h2", { text: "Dropped features" }), el("div", { class: "card", id: "dropped" }, (r.dropped && r.dropped.length)
    ? el("ul", { class: "dropped" }, r.dropped.map((d) => el("li", { text: d })))
    : el("span", { class: "muted", text: "Nothing was dropped in translation." })));

  const calls = toolCalls(p.events);
  if (calls.length) {
    kids.push(el("h2", { text: "Tool calls" }), el("table", { id: "tools" }, el("thead", {}, el("tr", {}, ["id", "name", "arguments", "result"].map((h) => el("th", { text: h })))),
      el("tbody", {}, calls.map((c) => el("tr", {}, el("td", { class: "mono", text: c.id }), el("td", { text: c.name }),
        el("td", {}, el("pre", { class: "mono", text: prettyBody(c.args) })), el("td", {}, el("pre", { class: "mono", text: c.result == null ? "–" : c.result })))))));
  }

  // both wires
  const up = p.upstream;
  const upKids = up.recorded ? up.calls.map((c, i) => el("div", {},
    el("div", { class: "call-head" }, "call " + (i + 1) + ": " + c.method + " " + c.url + " → " + (c.status || c.error || "…") + (c.truncated ? " (body cut at the cap)" : "")),
    el("details", {}, el("summary", { class: "muted", text: "request" }), el("pre", { class: "wire", text: Object.entries(c.request_headers || {}).map(([k, v]) => k + ": " + v).join("\n") + "\n\n" + prettyBody(c.request_body || "") })),
    el("pre", { class: "wire", text: c.body || "" })))
    : [el("p", { class: "muted", id: "upstream-not-recorded", text: "The upstream side was not recorded for this run. Send X-Bridge-Record: upstream with a request, or start the bridge with --record-upstream." })];
  kids.push(el("h2", { text: "Both wires" }), el("div", { class: "wires" },
    el("div", { id: "wire-client" }, el("h3", {}, "Client received · ", el("span", { class: "mono", text: p.client.dialect })),
      el("pre", { class: "wire", text: p.client.body + (p.client.truncated ? "\n… (cut)" : "") })),
    el("div", { id: "wire-upstream" }, el("h3", {}, "Upstream sent · ", el("span", { class: "mono", text: up.dialect + " (" + up.name + ")" })), upKids)));

  // events
  const rows = foldEvents(p.events);
  kids.push(el("h2", { text: "Timeline (" + p.events.length + " events" + (p.events_truncated ? ", first 5000" : "") + ")" }),
    el("table", { id: "events" }, el("thead", {}, el("tr", {}, ["+ms", "seq", "kind", "source", "detail"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.map((ev) => el("tr", { class: "k-" + ev.kind + (ev.final && ["failed", "cancelled", "interrupted"].includes(ev.final.status) ? " bad" : "") },
        el("td", { class: "num mono", text: (off(ev.time) || 0).toFixed(1) }),
        el("td", { class: "mono", text: ev.n > 1 ? ev.seq + "–" + ev.toSeq : ev.seq }),
        el("td", { class: "mono", text: ev.kind + (ev.n > 1 ? " ×" + ev.n : "") }),
        el("td", { class: "muted", text: ev.source || "" }),
        el("td", { class: "mono", text: eventDetail(ev) }))))));

  if (p.messages.length) {
    kids.push(el("h2", { text: "Messages of this run" }), chat(p.messages));
  }
  root.dataset.run = r.id;
  root.replaceChildren(...kids);
  if (r.status === "running") { // the live tail: each wire shows its newest frames
    for (const pre of root.querySelectorAll(".wires pre.wire")) pre.scrollTop = pre.scrollHeight;
  }
}

let refresh = () => {};

// liveNote says what came of a running run's Stop or Steer, in the page
// drawn now (a live page is drawn again for each event).
function liveNote(text) {
  const n = document.getElementById("live-note");
  if (n) n.textContent = text;
}
let liveAbort = null; // ends the run page's live stream when the route changes

async function runPage(id) {
  const my = gen;
  const root = el("div", { id: "run" });
  show(root);
  // paint renders p, keeping the scroll position and the steer draft (and
  // its focus) across renders.
  const paint = (p) => {
    const y = window.scrollY;
    const steer = document.getElementById("steer-input");
    const draft = steer ? steer.value : "", focused = steer !== null && document.activeElement === steer;
    const note = (document.getElementById("live-note") || {}).textContent || "";
    renderRun(p, root);
    const s2 = document.getElementById("steer-input");
    if (s2) { s2.value = draft; if (focused) s2.focus(); }
    if (note) liveNote(note);
    window.scrollTo(0, y);
  };
  refresh = async () => {
    const p = await api("runs/" + encodeURIComponent(id));
    if (my === gen) paint(p);
    return p;
  };
  const p = await refresh();
  if (p.run.status !== "running") return;
  follow(id, my, p, paint).catch(() => {
    // No stream (a proxy that buffers it, a network error): poll instead.
    if (my !== gen) return;
    root.dataset.live = "poll";
    every(my, (iv) => refresh().then((p) => { if (p.run.status !== "running") clearInterval(iv); }).catch(() => {}), 500);
  });
}

// follow streams a running run's page: GET runs/ID/live, read as SSE with
// fetch (EventSource cannot send the key). Each committed event joins the
// timeline and each frame the client's dialect wrote joins the client
// wire, drawn at most ten times a second; once the run has ended the page
// is loaded whole again (its waterfall, its upstream wire, its messages).
async function follow(id, my, p, paint) {
  const headers = { "Accept": "text/event-stream" };
  if (key()) headers["Authorization"] = "Bearer " + key();
  const ctl = new AbortController();
  liveAbort = ctl;
  const res = await fetch("/ui/api/runs/" + encodeURIComponent(id) + "/live", { headers, signal: ctl.signal });
  if (!res.ok || !res.body) throw new APIError(res.status, res.statusText);
  const run = Object.assign({}, p.run), events = [];
  let wire = "", timer = null, ended = false;
  const draw = () => {
    if (timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      if (my !== gen) return;
      paint(Object.assign({}, p, { run, events, client: Object.assign({}, p.client, { body: wire, truncated: false }) }));
      document.getElementById("run").dataset.live = "stream";
    }, 100);
  };
  const handle = (kind, data) => {
    if (kind === "event") {
      const ev = JSON.parse(data);
      events.push(ev);
      run.last_seq = ev.seq;
      if (ev.usage) run.usage = Object.assign({}, run.usage, ev.usage);
      if (ev.final) run.status = ev.final.status;
    } else if (kind === "wire") {
      wire += JSON.parse(data);
    } else if (kind === "end") {
      ended = true;
    }
    draw();
  };
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || my !== gen) break;
      buf += value;
      for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let kind = "", data = "";
        for (const line of frame.split("\n")) {
          if (line.startsWith("event: ")) kind = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        handle(kind, data);
      }
    }
  } finally {
    if (liveAbort === ctl) liveAbort = null;
  }
  if (my !== gen) return;
  if (!ended) throw new Error("the live stream ended before the run");
  clearTimeout(timer);
  await refresh();
}

// ---- a session ----

function chat(messages) {
  return el("div", { class: "chat" }, messages.map((m) => {
    let body = msgText(m);
    if (m.tool_calls && m.tool_calls.length) body += (body ? "\n" : "") + m.tool_calls.map((c) => "→ " + c.name + "(" + (c.arguments || "") + ")").join("\n");
    const who = m.role + (m.tool_call_id ? " · " + m.tool_call_id : "") + (m.run_id ? " · " : "");
    return el("div", { class: "msg " + m.role }, el("span", { class: "role" }, who, m.run_id ? runLink(m.run_id) : null), body || "(empty)");
  }));
}

async function sessionPage(id, principal) {
  const my = gen;
  const p = await api("sessions/" + encodeURIComponent(id) + sessQuery(principal));
  if (my !== gen) return;
  show(el("h1", {}, "Session ", el("span", { class: "mono", text: p.session.id })),
    el("h2", { text: "Runs, in order" }),
    el("table", { id: "session-runs" }, el("thead", {}, el("tr", {}, ["created", "run", "status", "dialects", "model", "duration"].map((h) => el("th", { text: h })))),
      el("tbody", {}, p.runs.map((r) => el("tr", {}, el("td", { class: "mono", text: fmtTime(r.created_at) }), el("td", {}, runLink(r.id)), el("td", {}, badge(r.status)),
        el("td", { class: "mono", text: r.inbound + " → " + r.outbound }), el("td", { text: r.model || "–" }), el("td", { class: "num", text: duration(r) }))))),
    el("h2", { text: "Transcript" + (p.more ? " (the newest 500 messages)" : "") }), chat(p.messages));
}

// ---- routing ----

async function route() {
  const my = ++gen;
  refresh = () => {};
  if (liveAbort) { liveAbort.abort(); liveAbort = null; }
  const h = location.hash.replace(/^#/, "") || "/";
  try {
    await whoami();
    if (my !== gen) return; // a newer route is on its way
    let m;
    if ((m = h.match(/^\/run\/([^?]+)/))) await runPage(decodeURIComponent(m[1]));
    else if ((m = h.match(/^\/session\/([^?]+)(?:\?principal=(.*))?/))) await sessionPage(decodeURIComponent(m[1]), m[2] && decodeURIComponent(m[2]));
    else await runsPage();
  } catch (err) {
    if (my === gen) showError(err);
  }
}

document.getElementById("signout").addEventListener("click", () => { sessionStorage.removeItem("bridge-key"); route(); });
window.addEventListener("hashchange", route);
route();
