// The sandbox console: plain JavaScript, no build step, nothing from other origins.
// It calls only the public admin API (X-Admin-Key) and the surfaces' APIs with the selected
// tenant's credentials, which this tab knows when it created the tenant (or they are pasted):
// the admin API never answers a tenant's secrets after creation.
"use strict";

const ADMIN = "/sandbox/v1";
const KEY_ITEM = "sandbox.admin_key";
const CREDS_ITEM = "sandbox.tenant_credentials";
const JOURNAL_EVERY_MS = 2000;
const CHART_DAYS = 30;
/// Most usage events read for the chart (Surface A pages of 500, newest pages first).
const CHART_MAX_PAGES = 4;

const $ = (sel, root = document) => root.querySelector(sel);
const state = { tenants: [], tenant: null, clock: null, journal: [], journalTimer: null, selectedEntry: null };

// ---- plumbing ----------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  for (const c of children.flat()) node.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return node;
}

function say(text, error = false) {
  const s = $("#status");
  s.textContent = text;
  s.classList.toggle("error", error);
}

function adminKey() { return sessionStorage.getItem(KEY_ITEM); }

function credentials(id) {
  const all = JSON.parse(sessionStorage.getItem(CREDS_ITEM) || "{}");
  return all[id] || null;
}

function rememberCredentials(id, creds) {
  const all = JSON.parse(sessionStorage.getItem(CREDS_ITEM) || "{}");
  all[id] = creds;
  sessionStorage.setItem(CREDS_ITEM, JSON.stringify(all));
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function call(method, url, { headers = {}, body } = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(url, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = text; }
  if (!r.ok) {
    const message = (data && data.message) || (typeof data === "string" ? data.slice(0, 200) : r.statusText);
    throw new ApiError(r.status, `${method} ${url}: ${r.status} ${message}`);
  }
  return { data, headers: r.headers };
}

async function admin(method, path, body) {
  try {
    return (await call(method, ADMIN + path, { headers: { "X-Admin-Key": adminKey() }, body })).data;
  } catch (e) {
    if (e.status === 401) {
      sessionStorage.removeItem(KEY_ITEM);
      showKeyPanel("The admin key was refused (401): type it again.");
    }
    throw e;
  }
}

/// Runs an action, reports its outcome in the status line.
async function act(label, fn) {
  say(`${label}...`);
  try {
    const result = await fn();
    say(`${label}: done`);
    return result;
  } catch (e) {
    say(`${label}: ${e.message}`, true);
    return undefined;
  }
}

/// `2026-11-26T16:06:56.151Z` as `2026-11-26 16:06` (the full time in the cell's title).
function shortTime(t) { return String(t).replace("T", " ").slice(0, 16); }

function seg(text) { return encodeURIComponent(text); }
function tenantPath(sub = "") { return `/tenants/${seg(state.tenant.id)}${sub}`; }

async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch (_) {
    const area = el("textarea", {}, text);
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  say("copied");
}

// ---- admin key ---------------------------------------------------------------------------

function takeKeyFromFragment() {
  const m = /(?:^#|&)admin_key=([^&]*)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(KEY_ITEM, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
}

function showKeyPanel(message) {
  $("#key-panel").hidden = false;
  $("#main").hidden = true;
  $("#key-forget").hidden = true;
  stopJournal();
  if (message) say(message, true);
}

async function start() {
  if (!adminKey()) { showKeyPanel(); return; }
  $("#key-panel").hidden = true;
  $("#main").hidden = false;
  $("#key-forget").hidden = false;
  await act("loading tenants", loadTenants);
}

// ---- tenants -----------------------------------------------------------------------------

async function loadTenants() {
  const all = [];
  for (let page = 1; ; page++) {
    const items = await admin("GET", `/tenants?page_size=100&page_number=${page}`);
    all.push(...items);
    if (items.length < 100) break;
  }
  state.tenants = all;
  const body = $("#tenants tbody");
  body.replaceChildren(...all.map(tenantRow));
  if (state.tenant && !all.some((t) => t.id === state.tenant.id)) closeTenant();
}

function tenantRow(t) {
  const del = el("button", { type: "button", class: "danger delete" }, "Delete");
  del.addEventListener("click", () => {
    if (!del.classList.contains("confirm")) {
      del.classList.add("confirm");
      del.textContent = "Confirm delete";
      setTimeout(() => { del.classList.remove("confirm"); del.textContent = "Delete"; }, 4000);
      return;
    }
    act(`deleting ${t.name}`, async () => {
      await admin("DELETE", `/tenants/${seg(t.id)}`);
      if (state.tenant && state.tenant.id === t.id) closeTenant();
      await loadTenants();
    });
  });
  const selected = state.tenant && state.tenant.id === t.id;
  return el("tr", { "data-tenant-id": t.id, "data-tenant-name": t.name, class: selected ? "selected" : "" },
    el("td", {}, t.name), el("td", {}, el("code", {}, t.id)), el("td", {}, t.time_zone), el("td", {}, t.created_at),
    el("td", {},
      el("button", { type: "button", class: "open", onclick: () => openTenant(t) }, "Open"), " ",
      el("button", { type: "button", class: "reset", title: "all data replaced by the demo seed; credentials kept",
        onclick: () => act(`resetting ${t.name}`, async () => {
          await admin("POST", `/tenants/${seg(t.id)}/reset`, { seed: "demo" });
          if (state.tenant && state.tenant.id === t.id) await refreshTenant();
        }) }, "Reset"), " ",
      del));
}

async function createTenant(ev) {
  ev.preventDefault();
  const name = $("#create-name").value.trim();
  const from = $("#create-from").value;
  const body = { name };
  if (from) {
    const [tenant, checkpoint] = JSON.parse(from);
    body.from = { tenant, checkpoint };
  } else {
    body.seed = $("#create-seed").value;
    const zone = $("#create-zone").value.trim();
    if (zone) body.time_zone = zone;
  }
  const created = await act(`creating ${name}`, () => admin("POST", "/tenants", body));
  if (!created) return;
  const basic = `${created.basic.username}:${created.basic.password}`;
  rememberCredentials(created.id, { api_key: created.api_key, basic });
  showCreated(created, basic);
  $("#create-form").reset();
  await loadTenants();
  await openTenant(created);
}

function showCreated(created, basic) {
  const base = location.origin;
  $("#created-name").textContent = `${created.name} (${created.id})`;
  $("#created-api-key").textContent = created.api_key;
  $("#created-basic").textContent = basic;
  $("#created-curl").textContent = [
    `curl -u '${basic}' ${base}/t/s/r/1.28/users/current`,
    `curl -H 'X-Api-Key: ${created.api_key}' ${base}/billing/2/adjustment-categories`,
    `curl -H 'X-Api-Key: ${created.api_key}' '${base}/revenue/3/collectors?page_size=2'`,
    `export SANDBOX_URL='${base}' SANDBOX_TENANT='${created.id}' SANDBOX_API_KEY='${created.api_key}' SANDBOX_BASIC='${basic}'`,
  ].join("\n");
  $("#created").hidden = false;
}

// ---- one tenant --------------------------------------------------------------------------

async function openTenant(t) {
  state.tenant = t;
  state.selectedEntry = null;
  $("#tenant-panel").hidden = false;
  $("#tenant-panel").dataset.tenantId = t.id;
  $("#tenant-title").textContent = `Tenant ${t.name} (${t.id})`;
  $("#journal-detail").replaceChildren(el("p", { class: "hint" }, "Select a request to see it and its answer."));
  $("#clock-transitions").replaceChildren();
  // Nothing of the previous tenant stays on screen while this one's data loads.
  $("#chart").replaceChildren();
  $("#timeline").replaceChildren();
  $("#timeline-list").replaceChildren();
  for (const id of ["#usage-recent", "#accounts", "#chargeinfos", "#entries", "#journal", "#checkpoints", "#faults", "#invoices", "#billruns", "#payments"]) $(`${id} tbody`).replaceChildren();
  for (const row of document.querySelectorAll("#tenants tbody tr")) row.classList.toggle("selected", row.dataset.tenantId === t.id);
  const creds = credentials(t.id);
  $("#keys-api-key").value = creds ? creds.api_key : "";
  $("#keys-basic").value = creds ? creds.basic : "";
  await act(`opening ${t.name}`, refreshTenant);
  startJournal();
}

function closeTenant() {
  state.tenant = null;
  $("#tenant-panel").hidden = true;
  stopJournal();
}

async function refreshTenant() {
  await Promise.all([loadClock(), loadCheckpoints(), loadFaults(), loadJournal(), loadTimeline()]);
  await loadData();
}

// ---- clock -------------------------------------------------------------------------------

async function loadClock() {
  state.clock = await admin("GET", tenantPath("/clock"));
  showClock(state.clock);
}

function showClock(c) {
  $("#clock-mode").textContent = c.mode;
  $("#clock-now").textContent = c.now;
  $("#clock-card").dataset.now = c.now;
}

/// `now` (RFC 3339 with its offset) plus one calendar month, same wall time and offset, the
/// day clamped to the month's end (what `sandbox clock advance T 1M` sends too).
function plusOneMonth(now) {
  const m = /^(\d{4})-(\d{2})-(\d{2})(T.*)$/.exec(now);
  if (!m) throw new Error(`the clock reads '${now}'`);
  let [y, mo, d] = [Number(m[1]), Number(m[2]) + 1, Number(m[3])];
  if (mo === 13) { y += 1; mo = 1; }
  const last = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(y, 4)}-${pad(mo)}-${pad(Math.min(d, last))}${m[4]}`;
}

async function advance(body, label) {
  const done = await act(label, () => admin("POST", tenantPath("/clock/advance"), body));
  if (!done) return;
  state.clock = done;
  showClock(done);
  const list = el("ul", { class: "transitions" },
    done.transitions.map((t) => el("li", {}, `${t.at} ${t.kind} ${t.id}: ${t.detail}`)));
  $("#clock-transitions").replaceChildren(
    el("p", { class: "hint", id: "clock-advanced" }, `advanced ${done.advanced_from} \u2192 ${done.advanced_to}: ${done.transitions.length} transition(s)`),
    list);
  await act("reading the tenant's data", async () => { await loadTimeline(); await loadData(); });
}

/// Puts the tenant back as it was before its last advance (the automatic checkpoint that
/// advance kept); the server answers 409 when none is left.
async function undoAdvance() {
  const done = await act("undoing the last advance", () => admin("POST", tenantPath("/clock/undo")));
  if (!done) return;
  state.clock = done;
  showClock(done);
  $("#clock-transitions").replaceChildren(el("p", { class: "hint", id: "clock-undone" },
    `undid the advance ${done.undone.advanced_from} \u2192 ${done.undone.advanced_to}; ${done.undo_left} earlier advance(s) can still be undone`));
  await act("reading the tenant's data", async () => { await loadTimeline(); await loadData(); });
}

// ---- what the clock did --------------------------------------------------------------------

/// The kinds of transitions, grouped as the timeline colours them.
const KIND_GROUPS = {
  "agreement_service.renewed": "renewal", "agreement_service.ended": "renewal",
  "bill_cycle.run": "run", "bill_batch.run": "run",
  "invoice.past_due": "due", "invoice.autopaid": "autopay", "account.collection_cleared": "collection",
};

/// The tenant's advances and undos as the journal recorded their answers (admin calls are
/// journaled with their first 64 KB), oldest first: each undo strikes the newest advance not
/// undone yet, as the server undoes them.
async function loadTimeline() {
  if (!state.tenant) return;
  const id = state.tenant.id;
  const query = `?method=POST&status=200&path=${seg("*/clock/*")}&page_size=100`;
  const entries = await admin("GET", tenantPath("/requests" + query));
  if (!state.tenant || state.tenant.id !== id) return;
  const steps = [];
  for (const e of entries.slice().reverse()) {
    let body = null;
    try { body = JSON.parse(e.response_body); } catch (_) { continue; }
    if (e.path.endsWith("/clock/advance") && body && Array.isArray(body.transitions)) {
      steps.push({ from: body.advanced_from, to: body.advanced_to, transitions: body.transitions, undone: false });
    } else if (e.path.endsWith("/clock/undo")) {
      const last = steps.filter((st) => !st.undone).pop();
      if (last) last.undone = true;
    }
  }
  drawTimeline(steps);
}

/// A function adding an SVG element (its attributes, its text) to `svg`; answers it.
function svgAdder(svg) {
  return (tag, attrs, text) => {
    const n = document.createElementNS(svg.namespaceURI, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
    if (text !== undefined) n.textContent = text;
    svg.append(n);
    return n;
  };
}

/// A line on the tenant clock from the first advance's start to the last one's end, a dot
/// per transition of the advances not undone; below, every advance with its transitions.
function drawTimeline(steps) {
  const live = steps.filter((st) => !st.undone);
  const ms = (t) => new Date(t).getTime();
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  const [w, h, pad] = [720, 60, 20];
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("role", "img");
  const add = svgAdder(svg);
  if (live.length) {
    const [start, end] = [ms(live[0].from), Math.max(...live.map((st) => ms(st.to)))];
    const x = (t) => pad + ((w - 2 * pad) * (ms(t) - start)) / Math.max(1, end - start);
    add("line", { x1: pad, y1: 30, x2: w - pad, y2: 30 });
    add("text", { x: pad, y: 54 }, live[0].from.slice(0, 10));
    add("text", { x: w - pad - 60, y: 54 }, new Date(end).toISOString().slice(0, 10));
    for (const st of live) add("line", { x1: x(st.from), y1: 22, x2: x(st.from), y2: 38 });
    for (const t of live.flatMap((st) => st.transitions)) {
      const dot = add("circle", { cx: x(t.at), cy: 30, r: 4, class: `k-${KIND_GROUPS[t.kind] || "other"}`, "data-kind": t.kind });
      const title = document.createElementNS(ns, "title");
      title.textContent = `${t.at} ${t.kind} ${t.id}: ${t.detail}`;
      dot.append(title);
    }
  }
  svg.dataset.transitions = String(live.reduce((n, st) => n + st.transitions.length, 0));
  $("#timeline").replaceChildren(steps.length ? svg : el("p", { class: "hint" }, "No advance recorded in the journal yet."));
  $("#timeline-list").replaceChildren(...steps.map((st) => el("li", { class: st.undone ? "advance undone" : "advance", "data-from": st.from, "data-to": st.to },
    el("span", {}, `${st.from} \u2192 ${st.to}: ${st.transitions.length} transition(s)${st.undone ? " (undone)" : ""}`),
    el("ul", {}, st.transitions.map((t) => el("li", { "data-kind": t.kind, "data-at": t.at, "data-id": String(t.id) },
      `${t.at} ${t.kind} ${t.id}: ${t.detail}`))))));
}

async function setClock(body, label) {
  const view = await act(label, () => admin("PUT", tenantPath("/clock"), body));
  if (view) { state.clock = view; showClock(view); $("#clock-transitions").replaceChildren(); await act("reading the tenant's data", loadData); }
}

// ---- checkpoints and faults ----------------------------------------------------------------

async function loadCheckpoints() {
  const list = await admin("GET", tenantPath("/checkpoints"));
  const t = state.tenant;
  $("#checkpoints tbody").replaceChildren(...list.map((c) => el("tr", { "data-checkpoint": c.name },
    el("td", {}, c.name), el("td", {}, String(c.version)), el("td", { title: c.created_at }, shortTime(c.created_at)),
    el("td", {},
      el("button", { type: "button", class: "restore", onclick: () => act(`restoring ${c.name}`, async () => {
        await admin("POST", tenantPath("/restore"), { checkpoint: c.name });
        await refreshTenant();
      }) }, "Restore"), " ",
      el("button", { type: "button", class: "fork", title: "create a new tenant from this checkpoint", onclick: () => {
        $("#create-from").value = JSON.stringify([t.id, c.name]);
        $("#create-name").focus();
        say(`fork from ${t.name}:${c.name}: name the new tenant and press Create`);
      } }, "Fork")))));
  const from = $("#create-from");
  from.replaceChildren(el("option", { value: "" }, "no fork: seed"),
    ...list.map((c) => el("option", { value: JSON.stringify([t.id, c.name]) }, `fork ${t.name}:${c.name}`)));
}

async function loadFaults() {
  const rules = await admin("GET", tenantPath("/faults"));
  $("#faults tbody").replaceChildren(...rules.map((r) => el("tr", { "data-rule": r.id },
    el("td", {}, r.method), el("td", { class: "wrap" }, r.path), el("td", {}, r.status == null ? "-" : String(r.status)),
    el("td", {}, String(r.latency_ms)), el("td", {}, String(r.probability)), el("td", {}, r.remaining == null ? "\u221e" : String(r.remaining)),
    el("td", {}, el("button", { type: "button", class: "danger remove", onclick: () => act(`removing ${r.id}`, async () => {
      await admin("DELETE", tenantPath(`/faults/${seg(r.id)}`));
      await loadFaults();
    }) }, "Remove")))));
}

async function addFault(ev) {
  ev.preventDefault();
  const num = (id) => { const v = $(id).value.trim(); return v === "" ? undefined : Number(v); };
  const body = { path: $("#fault-path").value.trim() };
  const method = $("#fault-method").value.trim();
  if (method) body.method = method;
  for (const [key, id] of [["status", "#fault-status"], ["latency_ms", "#fault-latency"], ["probability", "#fault-probability"], ["times", "#fault-times"]]) {
    const v = num(id);
    if (v !== undefined) body[key] = v;
  }
  const rule = await act("adding a fault rule", () => admin("POST", tenantPath("/faults"), body));
  if (rule) { $("#fault-form").reset(); await loadFaults(); }
}

// ---- journal -----------------------------------------------------------------------------

function startJournal() {
  stopJournal();
  state.journalTimer = setInterval(() => {
    if (!$("#journal-pause").checked && state.tenant) loadJournal().catch((e) => say(e.message, true));
  }, JOURNAL_EVERY_MS);
}

function stopJournal() {
  if (state.journalTimer) clearInterval(state.journalTimer);
  state.journalTimer = null;
}

async function loadJournal() {
  if (!state.tenant) return;
  const id = state.tenant.id;
  const entries = await admin("GET", tenantPath("/requests?page_size=100"));
  if (!state.tenant || state.tenant.id !== id) return;
  state.journal = entries;
  $("#journal tbody").replaceChildren(...entries.map((e) => {
    const query = e.query ? `?${e.query}` : "";
    return el("tr", { "data-entry-id": e.id, "data-status": String(e.status), class: e.id === state.selectedEntry ? "selected" : "",
      onclick: () => showEntry(e) },
      el("td", {}, e.time.slice(11, 23)), el("td", {}, e.method),
      el("td", { class: "wrap" }, e.path + query),
      el("td", { class: `s${String(e.status)[0]}` }, String(e.status) + (e.fault ? " \u26a1" : "")),
      el("td", {}, e.duration_ms.toFixed(1)));
  }));
}

function showEntry(e) {
  state.selectedEntry = e.id;
  for (const row of document.querySelectorAll("#journal tbody tr")) row.classList.toggle("selected", row.dataset.entryId === e.id);
  const headers = e.request_headers.map(([k, v]) => `${k}: ${v}`).join("\n");
  $("#journal-detail").replaceChildren(
    el("h4", {}, `${e.method} ${e.path}${e.query ? "?" + e.query : ""} \u2192 ${e.status}`),
    el("p", { class: "hint" }, `${e.time}, ${e.duration_ms.toFixed(1)} ms, ${e.surface}${e.fault ? ", fault " + e.fault : ""}`),
    el("h4", {}, "Request headers"), el("pre", {}, headers),
    el("h4", {}, "Request body" + (e.request_body_truncated ? " (truncated)" : "")), el("pre", { id: "detail-request" }, pretty(e.request_body)),
    el("h4", {}, "Answer" + (e.response_body_truncated ? " (truncated)" : "")), el("pre", { id: "detail-response" }, pretty(e.response_body)));
}

/// JSON and XML indented; anything else as it is.
function pretty(text) {
  if (!text) return "(empty)";
  const t = text.trim();
  if (t.startsWith("{") || t.startsWith("[")) {
    try { return JSON.stringify(JSON.parse(t), null, 2); } catch (_) { return text; }
  }
  if (t.startsWith("<")) {
    const doc = new DOMParser().parseFromString(t, "application/xml");
    if (doc.getElementsByTagName("parsererror").length) return text;
    const decl = t.startsWith("<?xml") ? t.slice(0, t.indexOf("?>") + 2) + "\n" : "";
    return decl + prettyXml(doc.documentElement, 0);
  }
  return text;
}

function prettyXml(node, depth) {
  const pad = "  ".repeat(depth);
  const attrs = Array.from(node.attributes).map((a) => ` ${a.name}="${a.value}"`).join("");
  const kids = Array.from(node.childNodes).filter((n) => n.nodeType === 1 || (n.nodeType === 3 && n.nodeValue.trim()));
  if (!kids.length) return `${pad}<${node.nodeName}${attrs}/>`;
  if (kids.length === 1 && kids[0].nodeType === 3) return `${pad}<${node.nodeName}${attrs}>${kids[0].nodeValue.trim()}</${node.nodeName}>`;
  const inner = kids.map((k) => (k.nodeType === 1 ? prettyXml(k, depth + 1) : "  ".repeat(depth + 1) + k.nodeValue.trim())).join("\n");
  return `${pad}<${node.nodeName}${attrs}>\n${inner}\n${pad}</${node.nodeName}>`;
}

// ---- data at a glance --------------------------------------------------------------------

function surfaceHeaders(kind) {
  const creds = credentials(state.tenant.id);
  if (!creds) return null;
  return kind === "basic" ? { Authorization: "Basic " + btoa(creds.basic) } : { "X-Api-Key": creds.api_key };
}

async function xml(path) {
  const headers = surfaceHeaders("basic");
  const r = await fetch(path, { headers: { ...headers, Accept: "application/xml" } });
  const text = await r.text();
  if (!r.ok) throw new ApiError(r.status, `GET ${path}: ${r.status}`);
  return new DOMParser().parseFromString(text, "application/xml").documentElement;
}

async function loadData() {
  if (!state.tenant) return;
  if (!credentials(state.tenant.id)) {
    const hint = el("p", { class: "hint" }, "Paste the tenant's API key and Basic credentials above to see its data.");
    $("#chart").replaceChildren(hint.cloneNode(true));
    for (const id of ["#usage-recent", "#accounts", "#chargeinfos", "#entries", "#invoices", "#billruns", "#payments"]) $(`${id} tbody`).replaceChildren();
    return;
  }
  const invoices = await xml("/t/s/r/1.28/invoices?pageSize=500");
  await Promise.all([loadUsage(invoiceRows(invoices)), loadAccounts(invoices), loadLedger(), loadPayments(), loadBillRuns()]);
  showInvoices(invoiceRows(invoices));
}

/// Amounts in cents (the platform's amounts have at most two decimals on Surface A).
function cents(text) { return Math.round(Number(text || "0") * 100); }
function money(c) { return (c / 100).toFixed(2); }

function invoiceRows(doc) {
  return Array.from(doc.getElementsByTagName("invoice")).map((inv) => {
    const ba = inv.getElementsByTagName("billingAccount")[0];
    return {
      eid: inv.getAttribute("eid"), num: inv.getAttribute("invoiceNum"), account: ba ? ba.getAttribute("eid") : "",
      status: inv.getAttribute("status"), amount: inv.getAttribute("amount") || "0", toPay: inv.getAttribute("amountToPay") || "0",
      date: inv.getAttribute("occurredOn") || "", due: inv.getAttribute("dueDate") || "", paid: inv.getAttribute("paidDate") || "",
    };
  });
}

/// The newest invoices first.
function showInvoices(rows) {
  const sorted = rows.slice().sort((a, b) => Number(b.eid) - Number(a.eid));
  $("#invoices tbody").replaceChildren(...sorted.map((i) => el("tr", { "data-invoice": i.eid, "data-status": i.status },
    el("td", {}, i.num), el("td", {}, i.account), el("td", {}, i.status), el("td", {}, i.amount), el("td", {}, i.toPay),
    el("td", { title: i.date }, i.date.slice(0, 10)), el("td", { title: i.due }, i.due.slice(0, 10) || "-"),
    el("td", { title: i.paid }, i.paid.slice(0, 10) || "-"))));
}

async function loadPayments() {
  const doc = await xml("/t/s/r/1.28/payments?pageSize=100");
  const rows = Array.from(doc.getElementsByTagName("payment")).map((p) => {
    const ba = p.getElementsByTagName("billingAccount")[0];
    const amount = cents(p.getAttribute("amount"));
    return { eid: p.getAttribute("eid"), account: ba ? ba.getAttribute("eid") : "", date: p.getAttribute("occurredOn") || "",
      amount, applied: amount - cents(p.getAttribute("unappliedAmount")), status: p.getAttribute("status") || "" };
  }).sort((a, b) => Number(b.eid) - Number(a.eid));
  $("#payments tbody").replaceChildren(...rows.map((p) => {
    const failed = p.status === "VOID" || p.status === "CANCELED";
    return el("tr", { "data-payment": p.eid },
      el("td", {}, p.eid), el("td", {}, p.account), el("td", { title: p.date }, p.date.slice(0, 10)),
      el("td", {}, money(p.amount)), el("td", {}, money(p.applied)),
      el("td", { class: failed ? "failed" : "" }, failed ? `${p.status} (failed)` : p.status));
  }));
}

/// The bill batches' runs with their invoices (Surface B expands both).
async function loadBillRuns() {
  const headers = surfaceHeaders("key");
  const batches = (await call("GET", "/billing/2/bill-batches?expand=bill_batch_runs.invoices", { headers })).data || [];
  const rows = [];
  for (const b of Array.isArray(batches) ? batches : []) {
    for (const r of b.bill_batch_runs || []) {
      const invoices = (r.invoices || []).map((i) => `${i.invoice_num || i.id}${i.amount == null ? "" : " (" + i.amount + ")"}`);
      rows.push(el("tr", { "data-run": String(r.id), "data-invoices": String((r.invoices || []).length) },
        el("td", {}, b.name), el("td", {}, String(r.id)), el("td", {}, r.bill_run_type || "-"), el("td", {}, r.status || "-"),
        el("td", { title: r.invoice_date || "" }, (r.invoice_date || r.open_date || "-").slice(0, 10)),
        el("td", { class: "wrap" }, invoices.length ? invoices.join(", ") : "none")));
    }
  }
  $("#billruns tbody").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { class: "hint" }, "no run yet"))]));
}

async function loadUsage(invoices) {
  const first = await xml("/t/s/r/1.28/usageEvents?pageSize=500");
  const pages = Number(first.getAttribute("totalPages") || "1");
  const docs = pages <= 1 ? [first] : [];
  for (let p = pages; p >= Math.max(1, pages - CHART_MAX_PAGES + 1) && pages > 1; p--) {
    docs.push(await xml(`/t/s/r/1.28/usageEvents?pageSize=500&pageNumber=${p}`));
  }
  const events = docs.flatMap((d) => Array.from(d.getElementsByTagName("usageEvent"))).map((u) => ({
    eid: Number(u.getAttribute("eid")), srid: u.getAttribute("serviceResourceIdentifier"), start: u.getAttribute("startTime"),
    amount: `${u.getAttribute("usageAmount")} ${u.getAttribute("usageUom")}`, charge: u.getAttribute("totalCharge") || "0",
    voided: u.getAttribute("voided") === "true",
  }));
  events.sort((a, b) => b.eid - a.eid);
  $("#usage-recent tbody").replaceChildren(...events.slice(0, 10).map((e) => el("tr", { "data-eid": String(e.eid) },
    el("td", {}, String(e.eid)), el("td", {}, e.srid), el("td", { title: e.start }, shortTime(e.start)), el("td", {}, e.amount), el("td", {}, e.charge))));
  drawChart(events.filter((e) => !e.voided), invoices);
}

/// Bars of the charges per day of the 30 days ending on the clock's date (dates as the
/// tenant's offset renders them), and beside each the amounts invoiced that day (invoices
/// by their date, canceled ones left out). Sums in millionths, so adding decimals drifts
/// nowhere.
function drawChart(events, invoices) {
  const today = (state.clock ? state.clock.now : new Date().toISOString()).slice(0, 10);
  const days = [];
  const end = new Date(today + "T00:00:00Z");
  for (let i = CHART_DAYS - 1; i >= 0; i--) days.push(new Date(end.getTime() - i * 86400000).toISOString().slice(0, 10));
  const micros = new Map(days.map((d) => [d, 0]));
  const counts = new Map(days.map((d) => [d, 0]));
  for (const e of events) {
    const day = (e.start || "").slice(0, 10);
    if (!micros.has(day)) continue;
    micros.set(day, micros.get(day) + Math.round(Number(e.charge) * 1e6));
    counts.set(day, counts.get(day) + 1);
  }
  const invoiced = new Map(days.map((d) => [d, 0]));
  for (const i of invoices) {
    const day = i.date.slice(0, 10);
    if (i.status === "CANCELED" || !invoiced.has(day)) continue;
    invoiced.set(day, invoiced.get(day) + Math.round(Number(i.amount) * 1e6));
  }
  const totals = days.map((d) => micros.get(d) / 1e6);
  const billed = days.map((d) => invoiced.get(d) / 1e6);
  const max = Math.max(...totals, ...billed, 0);
  const [w, h, left, bottom, top] = [720, 200, 48, 24, 12];
  const bw = (w - left) / CHART_DAYS;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("role", "img");
  svg.dataset.events = String([...counts.values()].reduce((a, b) => a + b, 0));
  svg.dataset.total = (days.reduce((a, d) => a + micros.get(d), 0) / 1e6).toFixed(6);
  svg.dataset.invoiced = (days.reduce((a, d) => a + invoiced.get(d), 0) / 1e6).toFixed(6);
  const add = svgAdder(svg);
  add("line", { x1: left, y1: h - bottom, x2: w, y2: h - bottom });
  add("text", { x: 2, y: top + 4 }, max ? max.toFixed(2) : "0");
  add("text", { x: 2, y: h - bottom }, "0");
  days.forEach((d, i) => {
    const bh = max ? ((h - bottom - top) * totals[i]) / max : 0;
    const bar = add("rect", { class: "bar", x: left + i * bw + 1, y: h - bottom - bh, width: (bw - 2) / 2, height: bh, "data-day": d, "data-total": totals[i].toFixed(6), "data-events": counts.get(d) });
    const title = document.createElementNS(ns, "title");
    title.textContent = `${d}: ${totals[i].toFixed(2)} from ${counts.get(d)} event(s)`;
    bar.append(title);
    const ih = max ? ((h - bottom - top) * billed[i]) / max : 0;
    const inv = add("rect", { class: "invoiced", x: left + i * bw + 1 + (bw - 2) / 2, y: h - bottom - ih, width: (bw - 2) / 2, height: ih, "data-invoice-day": d, "data-invoiced": billed[i].toFixed(6) });
    const it = document.createElementNS(ns, "title");
    it.textContent = `${d}: ${billed[i].toFixed(2)} invoiced`;
    inv.append(it);
    if (i % 5 === 0 || i === CHART_DAYS - 1) add("text", { x: left + i * bw, y: h - 6 }, d.slice(5));
  });
  $("#chart").replaceChildren(svg, el("p", { class: "hint" },
    `${svg.dataset.events} rated event(s), ${Number(svg.dataset.total).toFixed(2)} in all, from the ${events.length} most recent live events read (blue); ${Number(svg.dataset.invoiced).toFixed(2)} invoiced (orange)`));
}

async function loadAccounts(invoices) {
  const accounts = await xml("/t/s/r/1.28/billingAccounts?pageSize=100");
  const open = new Map();
  for (const inv of invoices.getElementsByTagName("invoice")) {
    if (inv.getAttribute("status") !== "OPEN") continue;
    const ba = inv.getElementsByTagName("billingAccount")[0];
    const key = ba ? ba.getAttribute("eid") : "";
    const o = open.get(key) || { n: 0, due: 0 };
    o.n += 1;
    o.due += Math.round(Number(inv.getAttribute("amountToPay") || "0") * 100);
    open.set(key, o);
  }
  $("#accounts tbody").replaceChildren(...Array.from(accounts.getElementsByTagName("billingAccount")).map((a) => {
    const o = open.get(a.getAttribute("eid"));
    return el("tr", {}, el("td", {}, a.getAttribute("accountNum")), el("td", {}, a.getAttribute("name")), el("td", {}, a.getAttribute("status")),
      el("td", {}, `${a.getAttribute("balance")} ${a.getAttribute("currencyType") || ""}`),
      el("td", {}, o ? `${o.n} (${(o.due / 100).toFixed(2)} to pay)` : "0"));
  }));
}

async function loadLedger() {
  const headers = surfaceHeaders("key");
  const infos = (await call("GET", "/revenue/3/ledgers/merged-chargeinfos?page_size=10", { headers })).data || [];
  fillGeneric("#chargeinfos", infos);
  const runs = (await call("GET", "/revenue/3/glruns?page_size=5", { headers })).data || [];
  const last = Array.isArray(runs) && runs.length ? runs[runs.length - 1] : null;
  const entries = last ? (await call("GET", `/revenue/3/glruns/${seg(last.id)}/journal-entries?page_size=10`, { headers })).data : [];
  fillGeneric("#entries", Array.isArray(entries) ? entries : []);
}

/// A table of the scalar members (the first six) of `items`.
function fillGeneric(sel, items) {
  const keys = items.length ? Object.keys(items[0]).filter((k) => typeof items[0][k] !== "object" || items[0][k] === null).slice(0, 6) : [];
  $(`${sel} thead`).replaceChildren(el("tr", {}, keys.map((k) => el("th", {}, k))));
  $(`${sel} tbody`).replaceChildren(...(items.length ? items.map((i) => el("tr", {}, keys.map((k) => el("td", {}, i[k] == null ? "-" : String(i[k])))))
    : [el("tr", {}, el("td", { class: "hint" }, "none"))]));
}

// ---- wiring ------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  takeKeyFromFragment();
  $("#key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY_ITEM, $("#key-input").value.trim());
    $("#key-input").value = "";
    start();
  });
  $("#key-forget").addEventListener("click", () => { sessionStorage.removeItem(KEY_ITEM); closeTenant(); showKeyPanel(); });
  $("#create-form").addEventListener("submit", createTenant);
  $("#checkpoint-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const name = $("#checkpoint-name").value.trim();
    const made = await act(`checkpoint ${name}`, () => admin("POST", tenantPath("/checkpoints"), { name }));
    if (made) { $("#checkpoint-form").reset(); await loadCheckpoints(); }
  });
  $("#fault-form").addEventListener("submit", addFault);
  $("#data-refresh").addEventListener("click", () => act("refreshing", refreshTenant));
  $("#keys-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    rememberCredentials(state.tenant.id, { api_key: $("#keys-api-key").value.trim(), basic: $("#keys-basic").value.trim() });
    act("reading the tenant's data", loadData);
  });
  $("#clock-freeze").addEventListener("click", () => setClock({ mode: "frozen" }, "freezing the clock"));
  $("#clock-real").addEventListener("click", () => setClock({ mode: "real" }, "clock back to real time"));
  $("#clock-at-form").addEventListener("submit", (ev) => { ev.preventDefault(); setClock({ frozen_at: $("#clock-at").value.trim() }, "freezing the clock"); });
  $("#clock-day").addEventListener("click", () => advance({ seconds: 86400 }, "advancing a day"));
  $("#clock-undo").addEventListener("click", undoAdvance);
  $("#clock-month").addEventListener("click", () => {
    try { advance({ to: plusOneMonth(state.clock.now) }, "advancing a month"); } catch (e) { say(e.message, true); }
  });
  for (const b of document.querySelectorAll("button.copy")) {
    b.addEventListener("click", () => copy($("#" + b.dataset.copy).textContent));
  }
  start();
});
