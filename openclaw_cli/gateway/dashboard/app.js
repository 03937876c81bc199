/* openclaw-cli dashboard (issue 28): a framework-free page that speaks the Gateway's own
 * WebSocket protocol 4. Every text from the Gateway reaches the DOM through textContent or
 * createTextNode (no HTML parsing of data); links are built only for http(s)/mailto URLs. */
"use strict";

(function () {
  const TOKEN_KEY = "openclaw.dashboard.token";
  const WRITE_KEY = "openclaw.dashboard.write";
  const READ = "operator.read";
  const WRITE = "operator.write";
  const PAGE = 200; // rows per sessions.list request
  const ROW_H = 30; // px, as --row in app.css
  const OVERSCAN = 10;
  const HISTORY_PAGE = 50;
  const KEEP_PAGES = 24; // pages held at most (4,800 rows): scrolling 100k rows keeps memory flat

  const $ = (id) => document.getElementById(id);
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }
  function fmtNum(n) {
    return typeof n === "number" && isFinite(n) ? n.toLocaleString("en-US") : "";
  }
  function fmtBytes(n) {
    if (typeof n !== "number" || !isFinite(n)) return "";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + " " + units[i];
  }
  function fmtAge(ms) {
    if (typeof ms !== "number" || !ms) return "";
    const s = Math.max(0, (Date.now() - ms) / 1000);
    if (s < 60) return Math.round(s) + "s ago";
    if (s < 3600) return Math.round(s / 60) + "m ago";
    if (s < 86400 * 2) return Math.round(s / 3600) + "h ago";
    return Math.round(s / 86400) + "d ago";
  }
  function fmtTime(ms) {
    if (typeof ms === "string") return ms;
    if (typeof ms !== "number" || !ms) return "";
    return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  // ---- the Gateway connection -------------------------------------------------------------------
  class Gateway {
    constructor(handlers) {
      this.handlers = handlers;
      this.ws = null;
      this.pending = new Map();
      this.nextId = 1;
      this.hello = null;
      this.closedByAuth = false;
      this.retry = 0;
      this.timer = null;
    }
    url() {
      return (location.protocol === "https:" ? "wss://" : "ws://") + location.host;
    }
    connect(token, write) {
      this.token = token;
      this.write = write;
      this.closedByAuth = false;
      clearTimeout(this.timer);
      if (this.ws) { try { this.ws.close(); } catch (e) { /* already gone */ } }
      const ws = new WebSocket(this.url());
      this.ws = ws;
      ws.onmessage = (ev) => this.onFrame(ws, ev.data);
      ws.onclose = () => this.onClose(ws);
      ws.onerror = () => {};
    }
    send(frame) {
      this.ws.send(JSON.stringify(frame));
    }
    request(method, params) {
      return new Promise((resolve, reject) => {
        if (!this.ws || this.ws.readyState !== WebSocket.OPEN || !this.hello) {
          reject(new Error("not connected"));
          return;
        }
        const id = "d" + this.nextId++;
        this.pending.set(id, { resolve, reject });
        this.send({ type: "req", id, method, params: params || {} });
      });
    }
    onFrame(ws, raw) {
      if (ws !== this.ws) return;
      let frame;
      try { frame = JSON.parse(raw); } catch (e) { return; }
      if (frame.type === "event") {
        if (frame.event === "connect.challenge") {
          const scopes = this.write ? [READ, WRITE] : [READ];
          // no token at all: tried once without auth (a loopback Gateway run with --auth none)
          const auth = this.token ? { token: this.token, password: this.token } : undefined;
          this.send({
            type: "req", id: "connect", method: "connect",
            params: {
              minProtocol: 4, maxProtocol: 4,
              client: { id: "openclaw-control-ui", version: "openclaw-cli-dashboard", platform: "web", mode: "webchat" },
              role: "operator", scopes, auth, userAgent: navigator.userAgent.slice(0, 200),
            },
          });
          return;
        }
        this.handlers.event(frame.event, frame.payload);
        return;
      }
      if (frame.type !== "res") return;
      if (frame.id === "connect") {
        if (frame.ok) {
          this.hello = frame.payload;
          this.retry = 0;
          this.handlers.ready(this.hello);
        } else {
          this.closedByAuth = true;
          this.handlers.authFailed(frame.error || {});
        }
        return;
      }
      const waiting = this.pending.get(frame.id);
      if (!waiting) return;
      this.pending.delete(frame.id);
      if (frame.ok) waiting.resolve(frame.payload);
      else {
        const err = new Error((frame.error && frame.error.message) || "request failed");
        err.code = frame.error && frame.error.code;
        waiting.reject(err);
      }
    }
    onClose(ws) {
      if (ws !== this.ws) return;
      this.hello = null;
      for (const waiting of this.pending.values()) waiting.reject(new Error("connection lost"));
      this.pending.clear();
      if (this.closedByAuth) return;
      // a restart or a network blip: reconnect with backoff, then resume where the page was
      const delay = Math.min(5000, 300 * Math.pow(2, this.retry++));
      this.handlers.lost(delay);
      this.timer = setTimeout(() => this.connect(this.token, this.write), delay);
    }
    can(scope) {
      const granted = (this.hello && this.hello.auth && this.hello.auth.scopes) || [];
      return granted.indexOf(scope) >= 0 || granted.indexOf("operator.admin") >= 0;
    }
  }

  // ---- safe Markdown (summaries): a small subset built as DOM nodes ----------------------------------
  const SAFE_URL = /^(https?:|mailto:)/i;
  function inline(parent, text) {
    // `code`, **bold**, *em*, [text](url); everything else is text
    const re = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))/g;
    let last = 0;
    let m;
    while ((m = re.exec(text))) {
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      const tok = m[0];
      if (m[1]) parent.appendChild(el("code", null, tok.slice(1, -1)));
      else if (m[2]) parent.appendChild(el("strong", null, tok.slice(2, -2)));
      else if (m[3]) parent.appendChild(el("em", null, tok.slice(1, -1)));
      else {
        const close = tok.indexOf("](");
        const label = tok.slice(1, close);
        const href = tok.slice(close + 2, -1).trim();
        if (SAFE_URL.test(href)) {
          const a = el("a", null, label);
          a.href = href;
          a.rel = "noopener noreferrer nofollow";
          a.target = "_blank";
          parent.appendChild(a);
        } else {
          const span = el("span", "inert", label); // javascript:, data:, vbscript:…: shown, never a link
          span.title = "link not followed: " + href.slice(0, 80);
          parent.appendChild(span);
        }
      }
      last = m.index + tok.length;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }
  function markdown(text) {
    const root = el("div", "text md");
    const lines = String(text).split("\n");
    let list = null;
    let para = null;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (/^```/.test(line)) {
        const body = [];
        for (i++; i < lines.length && !/^```/.test(lines[i]); i++) body.push(lines[i]);
        root.appendChild(el("pre", null, body.join("\n")));
        list = para = null;
        continue;
      }
      const h = /^(#{1,6})\s+(.*)$/.exec(line);
      const li = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
      if (h) {
        const node = el("h" + Math.min(6, h[1].length + 3));
        inline(node, h[2]);
        root.appendChild(node);
        list = para = null;
      } else if (li) {
        if (!list) { list = el(/^\s*\d/.test(line) ? "ol" : "ul"); root.appendChild(list); }
        const item = el("li");
        inline(item, li[1]);
        list.appendChild(item);
        para = null;
      } else if (!line.trim()) {
        list = para = null;
      } else {
        if (!para) { para = el("p"); root.appendChild(para); } else para.appendChild(document.createTextNode(" "));
        inline(para, line);
        list = null;
      }
    }
    return root;
  }

  // ---- a transcript message, as the HTML export renders its entry ------------------------------------
  function blocks(content) {
    if (typeof content === "string") return [{ type: "text", text: content }];
    return Array.isArray(content) ? content.filter((b) => b && typeof b === "object") : [];
  }
  // a heading's parts joined by " · ", the empty ones left out (a message may carry no timestamp:
  // chat.history adds none, as OpenClaw's does not)
  function heading(...parts) {
    return parts.filter((p) => p).join(" · ");
  }
  function renderMessage(msg) {
    const meta = msg.__openclaw || {};
    const when = fmtTime(msg.timestamp);
    if (meta.kind === "compaction" || meta.kind === "branch_summary" || meta.kind === "reset") {
      const art = el("article", "compaction");
      const tokens = meta.tokensBefore !== undefined && meta.tokensBefore !== null ? meta.tokensBefore + " tokens before" : "";
      const kind = meta.kind === "reset" ? "Reset" : meta.kind === "compaction" ? "Compaction summary" : "Branch summary";
      art.appendChild(el("h4", null, heading(kind, when, tokens)));
      if (meta.summary) art.appendChild(markdown(meta.summary));
      return art;
    }
    const role = typeof msg.role === "string" ? msg.role : "message";
    if (role === "toolResult") {
      const art = el("article", "tool-result");
      const name = msg.toolName || "tool";
      art.appendChild(el("h4", null, heading("Tool result", name + (msg.isError ? " (error)" : ""), when)));
      const text = blocks(msg.content).filter((b) => b.type === "text").map((b) => String(b.text || "")).join("\n");
      art.appendChild(details(name + " result", text));
      return art;
    }
    if (role === "bashExecution") {
      const art = el("article", "tool-result");
      art.appendChild(el("h4", null, heading("Shell", when)));
      art.appendChild(details("command", String(msg.command || "")));
      art.appendChild(details("output", String(msg.output || "")));
      return art;
    }
    const cls = role === "user" || role === "assistant" ? role : "other";
    const art = el("article", cls);
    const model = role === "assistant" && msg.model ? msg.model : "";
    art.appendChild(el("h4", null, heading(role.charAt(0).toUpperCase() + role.slice(1), when, model)));
    for (const b of blocks(msg.content)) {
      if (b.type === "text") art.appendChild(el("div", "text", b.text || ""));
      else if (b.type === "thinking") art.appendChild(details("Thinking", String(b.thinking || "")));
      else if (b.type === "toolCall") art.appendChild(details("Tool call · " + (b.name || ""), JSON.stringify(b.arguments, null, 2) || ""));
      else if (b.type === "image") art.appendChild(el("div", "note", "[image " + (b.mimeType || "") + "]"));
    }
    if (meta.truncated) art.appendChild(el("div", "muted", "(cut for display)"));
    return art;
  }
  function details(label, text) {
    const d = el("details");
    d.appendChild(el("summary", null, label));
    d.appendChild(el("pre", null, text));
    return d;
  }

  // ---- app state ---------------------------------------------------------------------------------
  const app = {
    gw: null,
    view: null,
    list: { params: {}, total: 0, pages: new Map(), index: new Map(), generation: 0, pool: [] },
    session: null,
  };

  function setStatus(text, bad) {
    const s = $("status");
    s.textContent = text;
    s.classList.toggle("bad", !!bad);
  }
  function showError(text) {
    const e = $("error");
    e.textContent = text || "";
    e.hidden = !text;
  }
  function hideAll() {
    for (const v of document.querySelectorAll(".view")) v.hidden = true;
  }
  function showLogin(message) {
    hideAll();
    $("nav").hidden = true;
    $("write-toggle").hidden = true;
    showError("");
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    $("login-token").value = "";
    $("login-token").focus();
  }

  // ---- token: from the URL fragment once, else typed once; kept in sessionStorage ----------------------
  function takeToken() {
    const hash = location.hash.replace(/^#/, "");
    if (/(^|&)token=/.test(hash)) {
      // read by hand: URLSearchParams would turn a "+" of the token into a space
      const raw = hash.split("&").find((part) => part.indexOf("token=") === 0) || "";
      let token = raw.slice("token=".length);
      try { token = decodeURIComponent(token); } catch (e) { /* kept as written */ }
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      // the token leaves the address bar (and the history entry) at once
      history.replaceState(null, "", location.pathname + location.search + "#/sessions");
    }
    return sessionStorage.getItem(TOKEN_KEY);
  }

  function start(token) {
    setStatus("connecting…");
    app.gw.connect(token, sessionStorage.getItem(WRITE_KEY) === "1");
  }

  // ---- routing -----------------------------------------------------------------------------------
  function route() {
    if (!app.gw || !app.gw.hello) return;
    const hash = location.hash || "#/sessions";
    let m;
    $("login").hidden = true;
    $("nav").hidden = false;
    showError("");
    if ((m = /^#\/session\/(.+)$/.exec(hash))) return show("session", () => openSession(decodeURIComponent(m[1])));
    if ((m = /^#\/search(?:\/(.*))?$/.exec(hash))) return show("search", () => runSearch(m[1] ? decodeURIComponent(m[1]) : ""));
    if (hash === "#/cleanup") return show("cleanup", runCleanup);
    if (hash === "#/storage") return show("storage", showStorage);
    return show("sessions", enterSessions);
  }
  function show(name, fn) {
    hideAll();
    app.view = name;
    $("view-" + name).hidden = false;
    for (const a of document.querySelectorAll("#nav a")) {
      a.classList.toggle("active", a.dataset.view === name || (name === "session" && a.dataset.view === "sessions"));
    }
    fn();
  }

  // ---- sessions: a virtualised table, pages fetched as they scroll into view ---------------------------
  function listParams() {
    const p = { limit: PAGE, includeGlobal: true, includeUnknown: true, includeSize: true };
    const q = $("filter").value.trim();
    if (q) p.search = q;
    p.sortBy = $("sort").value;
    const archived = $("archived").value;
    p.archived = archived === "all" ? "all" : archived === "true";
    if ($("pinned-only").checked) p.pinned = true;
    if ($("no-cron").checked) p.excludeCron = true;
    if ($("no-subagents").checked) p.excludeSubagents = true;
    if ($("no-system").checked) p.excludeSystem = true;
    return p;
  }
  function enterSessions() {
    if (app.list.loaded) { renderRows(); return; }
    reloadList();
  }
  function reloadList() {
    const list = app.list;
    list.generation++;
    list.params = listParams();
    list.pages = new Map();
    list.index = new Map();
    list.total = 0;
    list.loaded = true;
    $("live-note").hidden = true;
    $("grid-scroll").scrollTop = 0;
    $("count").textContent = "loading…";
    loadPage(0).then(renderRows);
  }
  function loadPage(n) {
    const list = app.list;
    if (list.pages.has(n)) return Promise.resolve();
    list.pages.set(n, null); // in flight
    const gen = list.generation;
    return app.gw.request("sessions.list", Object.assign({}, list.params, { offset: n * PAGE })).then((res) => {
      if (gen !== list.generation) return;
      const rows = res.sessions || [];
      list.pages.set(n, rows);
      evictPages(n);
      rows.forEach((row, i) => list.index.set(row.key, n * PAGE + i));
      list.total = typeof res.totalCount === "number" ? res.totalCount : Math.max(list.total, n * PAGE + rows.length);
      $("count").textContent = fmtNum(list.total) + " sessions";
      $("grid-spacer").style.height = list.total * ROW_H + "px";
      if (app.view === "sessions") renderRows();
      if (n === 0 && !performance.getEntriesByName("sessions-interactive").length) {
        performance.mark("sessions-interactive"); // the first rows are on screen (scripts/bench reads it)
      }
    }, (err) => {
      if (gen === list.generation) list.pages.delete(n);
      if (err.message !== "connection lost") showError("sessions.list failed: " + err.message);
    });
  }
  function evictPages(keep) {
    // the pages farthest from the one just loaded go first; they are fetched again if scrolled back to
    const list = app.list;
    if (list.pages.size <= KEEP_PAGES) return;
    const loaded = [...list.pages.keys()].filter((n) => list.pages.get(n));
    loaded.sort((a, b) => Math.abs(b - keep) - Math.abs(a - keep));
    for (const n of loaded.slice(0, list.pages.size - KEEP_PAGES)) {
      for (const row of list.pages.get(n)) if (list.index.get(row.key) !== undefined && Math.floor(list.index.get(row.key) / PAGE) === n) list.index.delete(row.key);
      list.pages.delete(n);
    }
  }
  function rowAt(i) {
    const page = app.list.pages.get(Math.floor(i / PAGE));
    return page ? page[i % PAGE] : undefined;
  }
  function makeRow() {
    const row = el("div", "grid-row");
    row.setAttribute("role", "row");
    for (const c of ["c-key mono", "c-name", "c-kind", "c-flags", "c-tokens", "c-size", "c-updated"]) row.appendChild(el("span", c));
    row.addEventListener("click", () => {
      if (row.dataset.key) location.hash = "#/session/" + encodeURIComponent(row.dataset.key);
    });
    return row;
  }
  function fillRow(node, data, i) {
    const cells = node.children;
    node.style.transform = "translateY(" + i * ROW_H + "px)";
    node.classList.toggle("gone", !!(data && data.__gone));
    if (!data) {
      node.classList.add("loading");
      node.dataset.key = "";
      cells[0].textContent = "…";
      for (let c = 1; c < cells.length; c++) cells[c].textContent = "";
      return;
    }
    node.classList.remove("loading");
    node.dataset.key = data.key;
    cells[0].textContent = data.key;
    cells[0].title = data.key;
    cells[1].textContent = data.label || data.displayName || "";
    cells[2].textContent = data.classification || data.kind || "";
    clear(cells[3]);
    for (const f of ["pinned", "archived", "unread"]) if (data[f]) cells[3].appendChild(el("span", "flag " + f, f));
    const tokens = typeof data.totalTokens === "number" ? data.totalTokens : (data.inputTokens || 0) + (data.outputTokens || 0);
    cells[4].textContent = tokens ? fmtNum(tokens) : "";
    cells[5].textContent = typeof data.transcriptBytes === "number" ? fmtBytes(data.transcriptBytes) : "";
    cells[6].textContent = fmtAge(data.updatedAt);
    cells[6].title = fmtTime(data.updatedAt);
  }
  let renderQueued = false;
  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => { renderQueued = false; renderRows(); });
  }
  function renderRows() {
    // row i is always drawn by pool[i % pool.length]: while scrolling, only the rows that came
    // into view are filled and moved; the others keep their text and position
    const list = app.list;
    const scroller = $("grid-scroll");
    const first = Math.max(0, Math.floor(scroller.scrollTop / ROW_H) - OVERSCAN);
    const count = Math.ceil(scroller.clientHeight / ROW_H) + 2 * OVERSCAN;
    const last = Math.min(list.total, first + count);
    const holder = $("grid-rows");
    if (list.pool.length < count) {
      while (list.pool.length < count) { const r = makeRow(); list.pool.push(r); holder.appendChild(r); }
      for (const node of list.pool) node._i = -1; // the modulus changed: every row is drawn again
    }
    const size = list.pool.length;
    const used = new Set();
    let missing = false;
    for (let i = first; i < last; i++) {
      const node = list.pool[i % size];
      used.add(node);
      const data = rowAt(i);
      if (node._i !== i || node._data !== data || node.hidden) {
        node._i = i;
        node._data = data;
        node.hidden = false;
        fillRow(node, data, i);
      }
      if (data === undefined) missing = true;
    }
    if (missing) queueLoad();
    for (const node of list.pool) {
      if (!used.has(node) && !node.hidden) { node.hidden = true; node._i = -1; }
    }
  }
  let loadTimer = null;
  function queueLoad() {
    // pages are asked for once scrolling pauses, for the rows then on screen: dragging the
    // scrollbar across 100k rows asks for the pages where it stops, not every page it passed
    clearTimeout(loadTimer);
    loadTimer = setTimeout(() => {
      const scroller = $("grid-scroll");
      const first = Math.max(0, Math.floor(scroller.scrollTop / ROW_H) - OVERSCAN);
      const last = Math.min(app.list.total, first + Math.ceil(scroller.clientHeight / ROW_H) + 2 * OVERSCAN);
      for (let n = Math.floor(first / PAGE); n * PAGE < last; n++) loadPage(n);
    }, 80);
  }
  function onSessionsChanged(payload) {
    if (!payload || typeof payload !== "object") return;
    const list = app.list;
    const key = payload.sessionKey;
    if (key && payload.session && typeof payload.session === "object") {
      const at = list.index.get(key);
      if (at !== undefined) {
        const page = list.pages.get(Math.floor(at / PAGE));
        const old = page && page[at % PAGE];
        if (old && old.key === key) {
          // the event's row has no size (a listing extension of ours): the one shown stays
          page[at % PAGE] = Object.assign({ transcriptBytes: old.transcriptBytes }, payload.session);
        }
        if (app.view === "sessions") scheduleRender();
      } else if (payload.reason === "create") {
        liveNote("new sessions were created");
      }
    } else if (key && payload.reason === "delete") {
      const at = list.index.get(key);
      if (at !== undefined) {
        const page = list.pages.get(Math.floor(at / PAGE));
        if (page && page[at % PAGE]) page[at % PAGE] = Object.assign({}, page[at % PAGE], { __gone: true });
        if (app.view === "sessions") scheduleRender();
      }
    } else if (!key && payload.reason && payload.reason !== "delete") {
      liveNote("the store changed (" + payload.reason + ")");
    }
    if (app.session && key === app.session.key && app.view === "session") refreshSessionMeta();
  }
  function liveNote(text) {
    if (!app.list.loaded) return;
    $("live-text").textContent = "Live: " + text + ".";
    $("live-note").hidden = false;
  }

  // ---- one session -------------------------------------------------------------------------------
  function openSession(key) {
    app.session = { key, offset: 0, row: null };
    $("session-title").textContent = key;
    clear($("session-meta"));
    clear($("transcript"));
    $("transcript-count").textContent = "";
    $("older").hidden = true;
    $("act-result").textContent = "";
    refreshSessionMeta();
    loadHistory(true);
  }
  const META_FIELDS = [
    ["sessionId", "Session id"], ["agentId", "Agent"], ["kind", "Kind"], ["classification", "Class"],
    ["label", "Label"], ["displayName", "Name"], ["channel", "Channel"], ["chatType", "Chat type"],
    ["model", "Model"], ["modelProvider", "Provider"], ["inputTokens", "Input tokens"], ["outputTokens", "Output tokens"],
    ["totalTokens", "Total tokens"], ["updatedAt", "Updated"], ["lastInteractionAt", "Last interaction"],
    ["archivedAt", "Archived at"], ["archiveReason", "Archive reason"], ["compactionCount", "Compactions"],
  ];
  function refreshSessionMeta() {
    const s = app.session;
    app.gw.request("sessions.describe", { key: s.key }).then((res) => {
      if (app.session !== s) return;
      const row = res.session;
      s.row = row;
      const dl = $("session-meta");
      clear(dl);
      if (!row) { dl.appendChild(el("dt", null, "Status")); dl.appendChild(el("dd", null, "not found")); return; }
      for (const [f, label] of META_FIELDS) {
        const v = row[f];
        if (v === undefined || v === null || v === "") continue;
        dl.appendChild(el("dt", null, label));
        dl.appendChild(el("dd", null, /At$/.test(f) ? fmtTime(v) + " (" + fmtAge(v) + ")" : typeof v === "number" ? fmtNum(v) : String(v)));
      }
      const flags = ["pinned", "archived", "unread", "isMain", "hasActiveRun"].filter((f) => row[f]);
      dl.appendChild(el("dt", null, "Flags"));
      const dd = el("dd");
      for (const f of flags) dd.appendChild(el("span", "flag " + f, f));
      if (!flags.length) dd.textContent = "none";
      dl.appendChild(dd);
      const canWrite = app.gw.can(WRITE);
      $("session-actions").hidden = !canWrite;
      $("act-pin").textContent = row.pinned ? "Unpin" : "Pin";
      $("act-archive").textContent = row.archived ? "Restore (unarchive)" : "Archive";
      $("act-archive").disabled = !!row.isMain;
      $("act-label").value = row.label || "";
    }, (err) => showError("sessions.describe failed: " + err.message));
  }
  function loadHistory(fresh) {
    const s = app.session;
    const params = { sessionKey: s.key, limit: HISTORY_PAGE };
    if (!fresh) params.offset = s.offset;
    app.gw.request("chat.history", params).then((res) => {
      if (app.session !== s) return;
      const box = $("transcript");
      const frag = document.createDocumentFragment();
      for (const m of res.messages || []) frag.appendChild(renderMessage(m));
      box.insertBefore(frag, box.firstChild); // older pages go on top
      s.offset = typeof res.nextOffset === "number" ? res.nextOffset : s.offset + (res.messages || []).length;
      $("older").hidden = !res.hasMore;
      const shown = box.children.length;
      $("transcript-count").textContent = "(" + fmtNum(shown) + " of " + fmtNum(res.totalMessages || 0) + " messages)";
    }, (err) => showError("chat.history failed: " + err.message));
  }
  function patch(params, what) {
    const s = app.session;
    $("act-result").textContent = what + "…";
    app.gw.request("sessions.patch", Object.assign({ key: s.key }, params)).then(() => {
      $("act-result").textContent = what + ": done";
      refreshSessionMeta();
    }, (err) => { $("act-result").textContent = what + " failed: " + err.message; });
  }

  // ---- search ------------------------------------------------------------------------------------
  function terms(query) {
    return query.replace(/\b(AND|OR|NOT|NEAR)\b/g, " ").split(/[\s"()*:^+-]+/).filter((t) => t.length > 1);
  }
  function highlighted(text, words) {
    const node = el("div", "snippet");
    if (!words.length) { node.textContent = text; return node; }
    const re = new RegExp("(" + words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|") + ")", "gi");
    let last = 0;
    let m;
    while ((m = re.exec(text))) {
      if (m.index > last) node.appendChild(document.createTextNode(text.slice(last, m.index)));
      node.appendChild(el("mark", null, m[0]));
      last = m.index + m[0].length;
      if (!m[0].length) re.lastIndex++;
    }
    if (last < text.length) node.appendChild(document.createTextNode(text.slice(last)));
    return node;
  }
  function runSearch(query) {
    $("search-q").value = query;
    const out = $("search-results");
    clear(out);
    $("search-info").textContent = "";
    if (!query) return;
    $("search-info").textContent = "searching…";
    app.gw.request("sessions.search", { query, limit: 25 }).then((res) => {
      const hits = res.results || [];
      $("search-info").textContent = hits.length + (res.truncated ? "+" : "") + " hits";
      const words = terms(query);
      for (const hit of hits) {
        const li = el("li");
        const key = hit.sessionKey || hit.key || "";
        const head = el("div", "hit-head");
        const a = el("a", "mono", key);
        a.href = "#/session/" + encodeURIComponent(key);
        head.appendChild(a);
        head.appendChild(document.createTextNode(" · " + (hit.role || "") + " · " + fmtTime(hit.timestamp) + (hit.source && hit.source !== "store" ? " · " + hit.source : "")));
        li.appendChild(head);
        li.appendChild(highlighted(String(hit.snippet || ""), words));
        out.appendChild(li);
      }
    }, (err) => { $("search-info").textContent = ""; showError("sessions.search failed: " + err.message); });
  }

  // ---- cleanup preview ---------------------------------------------------------------------------
  const REASONS = [
    ["pruned", "pruned (stale)", "bad"], ["capped", "capped (over maxEntries)", "bad"],
    ["archived", "archived in place (stale)", "warn"], ["capArchived", "archived in place (cap)", "warn"],
    ["modelRunPruned", "model-run probes pruned", "bad"], ["missing", "missing transcripts", "bad"],
    ["dmScopeRetired", "DM scope retired", "warn"],
  ];
  function bars(rows, max) {
    const grid = el("div", "bars");
    for (const [label, value, tone, shown] of rows) {
      grid.appendChild(el("span", null, label));
      const bar = el("div", "bar" + (tone ? " " + tone : ""));
      const fill = el("i");
      fill.style.width = (max > 0 ? Math.max(value > 0 ? 1 : 0, (100 * value) / max) : 0) + "%";
      bar.appendChild(fill);
      grid.appendChild(bar);
      grid.appendChild(el("span", "mono", shown !== undefined ? shown : fmtNum(value)));
    }
    return grid;
  }
  function runCleanup() {
    const out = $("cleanup-out");
    clear(out);
    out.appendChild(el("p", "muted", "planning…"));
    app.gw.request("sessions.cleanup", { allAgents: true, dryRun: true, enforce: true, includeActions: true }).then((res) => {
      clear(out);
      const stores = Array.isArray(res.stores) ? res.stores : [res];
      const cards = el("div", "cards");
      for (const s of stores) {
        const card = el("div", "card");
        card.appendChild(el("h3", null, "Agent " + s.agentId + " · " + (s.storePath || "")));
        card.appendChild(el("p", "muted",
          "--enforce under the rules of OpenClaw " + (s.release || "?") +
          " · " + fmtNum(s.beforeCount) + " → " + fmtNum(s.afterCount) + " rows"));
        const rows = REASONS.map(([f, label, tone]) => [label, s[f] || 0, tone]);
        card.appendChild(bars(rows, Math.max(1, s.beforeCount || 0)));
        const disk = s.diskBudget || {};
        if (disk.maxBytes) {
          card.appendChild(el("p", "muted", "Disk budget"));
          card.appendChild(bars([
            ["before", disk.totalBytesBefore || 0, disk.overBudget ? "bad" : "", fmtBytes(disk.totalBytesBefore)],
            ["after", disk.totalBytesAfter || 0, "", fmtBytes(disk.totalBytesAfter)],
            ["high water", disk.highWaterBytes || 0, "warn", fmtBytes(disk.highWaterBytes)],
            ["max", disk.maxBytes || 0, "", fmtBytes(disk.maxBytes)],
          ], Math.max(disk.maxBytes, disk.totalBytesBefore || 0)));
        }
        const groups = new Map();
        for (const a of s.plannedActions || []) {
          if (!groups.has(a.action)) groups.set(a.action, []);
          groups.get(a.action).push(a.key);
        }
        for (const [action, keys] of groups) {
          const d = el("details");
          d.appendChild(el("summary", null, action + " · " + keys.length));
          const ul = el("ul", "keys");
          for (const k of keys) {
            const li = el("li");
            const a = el("a", "mono", k);
            a.href = "#/session/" + encodeURIComponent(k);
            li.appendChild(a);
            ul.appendChild(li);
          }
          d.appendChild(ul);
          card.appendChild(d);
        }
        if (!groups.size) card.appendChild(el("p", null, "Nothing would be removed or archived."));
        cards.appendChild(card);
      }
      out.appendChild(cards);
    }, (err) => { clear(out); showError("cleanup preview failed: " + err.message); });
  }

  // ---- storage -----------------------------------------------------------------------------------
  const STORAGE_METHOD = "storage.report";
  function showStorage() {
    // ours, not announced in hello-ok (its method list stays OpenClaw's): asked, and an unknown
    // method means this Gateway has no storage report
    const out = $("storage-out");
    clear(out);
    out.appendChild(el("p", "muted", "measuring…"));
    app.gw.request(STORAGE_METHOD, { top: 10 }).then((res) => { clear(out); drawStorage(out, res); }, (err) => {
      clear(out);
      if (/^unknown method/.test(err.message)) {
        const box = el("div", "unavailable");
        box.appendChild(el("h3", null, "Storage figures are not available yet"));
        box.appendChild(el("p", null, "This Gateway does not serve the storage report (" + STORAGE_METHOD + "). Run `openclaw storage` in a terminal for the same figures."));
        out.appendChild(box);
      } else showError(STORAGE_METHOD + " failed: " + err.message);
    });
  }
  function card(title) {
    const c = el("div", "card");
    c.appendChild(el("h3", null, title));
    return c;
  }
  function sizeBars(items, label, value, extra) {
    const rows = items.slice().sort((a, b) => (value(b) || 0) - (value(a) || 0))
      .map((it) => [label(it), value(it) || 0, "", fmtBytes(value(it) || 0) + (extra ? extra(it) : "")]);
    return bars(rows, Math.max(1, ...rows.map((r) => r[1])));
  }
  function drawStorage(out, doc) {
    // `openclaw storage --json` (docs/storage.md): disk figures, then logical ones, then what is reclaimable
    const total = doc.total || {};
    out.appendChild(el("p", "muted", "Measured " + (doc.root || "") + " · " + fmtBytes(total.diskBytes) + " on disk (" +
      fmtBytes(total.bytes) + " apparent) in " + fmtNum(total.files) + " files · " + fmtTime(doc.generatedAt)));
    const cards = el("div", "cards");
    if (Array.isArray(doc.byAgent)) {
      const c = card("Disk by agent");
      c.appendChild(sizeBars(doc.byAgent, (a) => a.agentId, (a) => a.diskBytes));
      cards.appendChild(c);
    }
    if (Array.isArray(doc.byContainer)) {
      const c = card("Disk by container (SQLite, WAL, transcripts, archives…)");
      c.appendChild(sizeBars(doc.byContainer.filter((x) => x.files || x.diskBytes), (x) => x.container, (x) => x.diskBytes));
      for (const x of doc.byContainer) {
        if (!x.byReason || !Object.keys(x.byReason).length) continue;
        c.appendChild(el("p", "muted", x.container + " by reason"));
        c.appendChild(sizeBars(Object.entries(x.byReason).map(([reason, v]) => Object.assign({ reason }, v)), (v) => v.reason, (v) => v.diskBytes));
      }
      cards.appendChild(c);
    }
    if (Array.isArray(doc.byKind)) {
      const c = card("Event text by session kind");
      c.appendChild(sizeBars(doc.byKind.filter((k) => k.sessions), (k) => k.kind, (k) => k.bytes, (k) => " · " + fmtNum(k.sessions) + " sessions"));
      cards.appendChild(c);
    }
    if (Array.isArray(doc.byPayload)) {
      const c = card("Event text by payload class");
      c.appendChild(sizeBars(doc.byPayload, (p) => p.class, (p) => p.bytes, (p) => " · " + fmtNum(p.events) + " events"));
      if (Array.isArray(doc.media) && doc.media.length) {
        c.appendChild(el("p", "muted", "inline media by type"));
        c.appendChild(sizeBars(doc.media, (m) => m.mimeType, (m) => m.bytes));
      }
      cards.appendChild(c);
    }
    if (Array.isArray(doc.reclaimable)) {
      const c = card("Reclaimable");
      c.appendChild(sizeBars(doc.reclaimable, (r) => r.setting, (r) => r.bytes, (r) => (r.files ? " · " + fmtNum(r.files) + " files" : "")));
      cards.appendChild(c);
    }
    if (Array.isArray(doc.topSessions) && doc.topSessions.length) {
      const c = card("Biggest sessions");
      const ol = el("ol", "keys");
      for (const t of doc.topSessions) {
        const li = el("li");
        const a = el("a", "mono", t.key);
        a.href = "#/session/" + encodeURIComponent(t.key);
        li.appendChild(a);
        li.appendChild(document.createTextNode(" · " + fmtBytes(t.bytes) + " · " + fmtNum(t.events) + " events · " + (t.kind || "")));
        ol.appendChild(li);
      }
      c.appendChild(ol);
      cards.appendChild(c);
    }
    if (Array.isArray(doc.unreadable) && doc.unreadable.length) {
      const c = card("Could not be read");
      const ul = el("ul", "keys");
      for (const u of doc.unreadable) ul.appendChild(el("li", null, u.path + ": " + u.error));
      c.appendChild(ul);
      cards.appendChild(c);
    }
    out.appendChild(cards);
  }

  // ---- wiring ------------------------------------------------------------------------------------
  function init() {
    app.gw = new Gateway({
      ready(hello) {
        setStatus("connected" + (app.gw.can(WRITE) ? " · changes allowed" : " · read-only"));
        $("write-toggle").hidden = false;
        $("write-mode").checked = sessionStorage.getItem(WRITE_KEY) === "1";
        app.gw.request("sessions.subscribe", {}).catch(() => {});
        const resumed = app.resumed;
        app.resumed = true;
        if (resumed && app.view === "sessions") {
          // after a reconnect the pages may be stale: fetch the visible ones again
          app.list.loaded = false;
        }
        route();
      },
      authFailed(error) {
        sessionStorage.removeItem(TOKEN_KEY);
        setStatus("not connected", true);
        if (!app.gw.token) showLogin("This Gateway needs its token or password.");
        else showLogin("The Gateway refused the token: " + (error.message || error.code || "unauthorized"));
      },
      lost(delay) {
        setStatus("connection lost: reconnecting in " + Math.round(delay / 100) / 10 + " s…", true);
      },
      event(name, payload) {
        if (name === "sessions.changed") onSessionsChanged(payload);
        else if (name === "shutdown") setStatus("Gateway stopping…", true);
      },
    });
    $("login-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const token = $("login-token").value;
      if (!token) return;
      sessionStorage.setItem(TOKEN_KEY, token);
      $("login").hidden = true;
      start(token);
    });
    $("write-mode").addEventListener("change", () => {
      sessionStorage.setItem(WRITE_KEY, $("write-mode").checked ? "1" : "0");
      start(sessionStorage.getItem(TOKEN_KEY));
    });
    let filterTimer = null;
    $("filter").addEventListener("input", () => { clearTimeout(filterTimer); filterTimer = setTimeout(reloadList, 250); });
    for (const id of ["sort", "archived", "pinned-only", "no-cron", "no-subagents", "no-system"]) $(id).addEventListener("change", reloadList);
    $("live-refresh").addEventListener("click", reloadList);
    $("grid-scroll").addEventListener("scroll", scheduleRender, { passive: true });
    window.addEventListener("resize", scheduleRender);
    $("older").addEventListener("click", () => loadHistory(false));
    $("act-pin").addEventListener("click", () => patch({ pinned: !(app.session.row && app.session.row.pinned) }, "pin"));
    $("act-archive").addEventListener("click", () => {
      const row = app.session.row || {};
      patch({ archived: !row.archived, expectedSessionId: row.sessionId }, row.archived ? "restore" : "archive");
    });
    $("act-label-save").addEventListener("click", () => {
      const v = $("act-label").value.trim();
      patch({ label: v ? v : null }, "label");
    });
    $("search-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const q = $("search-q").value.trim();
      const target = "#/search/" + encodeURIComponent(q);
      if (location.hash === target) runSearch(q);
      else location.hash = target;
    });
    $("cleanup-run").addEventListener("click", runCleanup);
    window.addEventListener("hashchange", () => {
      if (/(^|&)token=/.test(location.hash.replace(/^#/, ""))) { start(takeToken()); return; }
      route();
    });
    start(takeToken() || "");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
