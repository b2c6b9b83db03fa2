// The kioku inspector: every view is a thin rendering of the memory API (/v1/...). The page holds
// no memory logic; all text from the server is inserted with textContent, never as HTML.
"use strict";

const state = {
  token: sessionStorage.getItem("kioku-token") || "",
  lang: localStorage.getItem("kioku-lang") || null,
  character: null, user: null, canEdit: false, view: "users",
  month: null, selectedDay: null, days: new Map(),
};
const $ = (sel) => document.querySelector(sel);

function t(key, ...args) {
  const w = WORDS[state.lang || "en"][key];
  return typeof w === "function" ? w(...args) : (w ?? key);
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function status(text, isError = false) {
  const s = $("#status");
  s.textContent = text || "";
  s.classList.toggle("error", isError);
}

class ApiError extends Error {
  constructor(statusCode, message) { super(message); this.statusCode = statusCode; }
}

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (state.token) headers["Authorization"] = `Bearer ${state.token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (resp.status === 204) return null;
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const message = data?.error?.message || data?.detail?.[0]?.msg || `${resp.status} ${resp.statusText}`;
    throw new ApiError(resp.status, message);
  }
  return data;
}

const enc = encodeURIComponent;
const charPath = () => `/v1/characters/${enc(state.character)}`;
const userPath = () => `${charPath()}/users/${enc(state.user)}`;

async function guarded(fn) {
  try {
    await fn();
  } catch (err) {
    if (err instanceof ApiError && err.statusCode === 401) { showLogin(err.message); return; }
    status(err.message, true);
  }
}

// -- language -------------------------------------------------------------------------------------

function applyLanguage() {
  document.documentElement.lang = state.lang === "zh" ? "zh-CN" : "en";
  $("#language").value = state.lang;
  for (const node of document.querySelectorAll("[data-t]")) node.textContent = t(node.dataset.t);
  for (const node of document.querySelectorAll("[data-tp]")) node.placeholder = t(node.dataset.tp);
  $("#edit-state").textContent = state.canEdit ? t("editOn") : t("editOff");
}

// -- login ----------------------------------------------------------------------------------------

function showLogin(message) {
  $("#login").hidden = false;
  $("#login-error").textContent = message || "";
  $("#token").focus();
}

$("#login").addEventListener("submit", (ev) => {
  ev.preventDefault();
  state.token = $("#token").value.trim();
  sessionStorage.setItem("kioku-token", state.token);
  $("#login").hidden = true;
  guarded(start);
});

// -- characters and users -------------------------------------------------------------------------

async function start() {
  const characters = await api("GET", "/v1/characters");
  const select = $("#character");
  select.replaceChildren(...characters.map((c) => el("option", { value: c.id }, c.name && c.name !== c.id ? `${c.name} (${c.id})` : c.id)));
  const wanted = new URLSearchParams(location.search).get("character");
  if (wanted && characters.some((c) => c.id === wanted)) select.value = wanted;
  await chooseCharacter(select.value);
}

async function chooseCharacter(id) {
  if (!id) return;
  state.character = id;
  const info = await api("GET", charPath());
  state.canEdit = !!info.allow_edit;
  document.body.classList.toggle("can-edit", state.canEdit);
  if (!localStorage.getItem("kioku-lang")) state.lang = info.language === "zh" ? "zh" : "en";
  applyLanguage();
  const users = await api("GET", `${charPath()}/users`);
  const select = $("#user");
  select.replaceChildren(...users.map((u) => el("option", { value: u.id }, u.id)));
  const wanted = new URLSearchParams(location.search).get("user");
  if (wanted && users.some((u) => u.id === wanted)) select.value = wanted;
  state.user = select.value || null;
  renderUsers(users);
  await showView(state.view);
}

function renderUsers(users) {
  const body = $("#users-table tbody");
  if (!users.length) { body.replaceChildren(el("tr", {}, el("td", { colspan: 4 }, t("noUsers")))); return; }
  body.replaceChildren(...users.map((u) => el("tr", {
    class: "clickable", dataset: { user: u.id },
    onclick: () => { $("#user").value = u.id; state.user = u.id; showView("diary"); },
  }, el("td", {}, u.id), el("td", {}, u.turns), el("td", {}, u.facts), el("td", {}, u.last_active ? fmtTime(u.last_active) : "—"))));
}

$("#character").addEventListener("change", (ev) => guarded(() => chooseCharacter(ev.target.value)));
$("#user").addEventListener("change", (ev) => { state.user = ev.target.value; state.month = null; guarded(() => showView(state.view)); });
$("#language").addEventListener("change", (ev) => {
  state.lang = ev.target.value; localStorage.setItem("kioku-lang", state.lang); applyLanguage(); guarded(() => showView(state.view));
});

// -- views ----------------------------------------------------------------------------------------

const VIEWS = { users: async () => {}, diary: loadDiary, facts: loadFacts, worldbook: loadWorldBook, prompt: async () => {} };

async function showView(name) {
  state.view = name;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.view === name);
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== `view-${name}`;
  status("");
  const needsUser = name === "diary" || name === "facts" || name === "prompt";
  if (needsUser && !state.user) { status(t("noUsers")); return; }
  await VIEWS[name]();
}

for (const b of document.querySelectorAll("#tabs button")) {
  b.addEventListener("click", () => guarded(() => showView(b.dataset.view)));
}

function fmtTime(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : iso.replace("T", " ").slice(0, 16);
}

// -- diary ----------------------------------------------------------------------------------------

async function loadDiary() {
  const days = await api("GET", `${userPath()}/diary/days`);
  state.days = new Map(days.map((d) => [d.day, d.turns]));
  if (!state.month) {
    const last = days.length ? days[days.length - 1].day : new Date().toISOString().slice(0, 10);
    state.month = last.slice(0, 7);
  }
  renderCalendar();
  if (state.selectedDay && state.days.has(state.selectedDay)) await openDay(state.selectedDay);
}

function renderCalendar() {
  const [y, m] = state.month.split("-").map(Number);
  $("#cal-title").textContent = state.month;
  const first = new Date(Date.UTC(y, m - 1, 1));
  const lead = (first.getUTCDay() + 6) % 7; // Monday first
  const daysInMonth = new Date(Date.UTC(y, m, 0)).getUTCDate();
  const max = Math.max(1, ...state.days.values());
  const cells = t("weekdays").map((w) => el("div", { class: "head" }, w));
  for (let i = 0; i < lead; i++) cells.push(el("div"));
  for (let d = 1; d <= daysInMonth; d++) {
    const day = `${state.month}-${String(d).padStart(2, "0")}`;
    const n = state.days.get(day) || 0;
    const level = n ? Math.min(4, 1 + Math.floor((3 * n) / max)) : null;
    cells.push(el("button", {
      class: `day${day === state.selectedDay ? " selected" : ""}`, type: "button", title: day,
      dataset: level ? { day, level: String(level) } : { day },
      onclick: () => guarded(() => openDay(day)),
    }, String(d), n ? el("span", { class: "n" }, n) : ""));
  }
  $("#calendar").replaceChildren(...cells);
}

function shiftMonth(delta) {
  const [y, m] = state.month.split("-").map(Number);
  const d = new Date(Date.UTC(y, m - 1 + delta, 1));
  state.month = d.toISOString().slice(0, 7);
  renderCalendar();
}
$("#cal-prev").addEventListener("click", () => shiftMonth(-1));
$("#cal-next").addEventListener("click", () => shiftMonth(1));

async function openDay(day) {
  state.selectedDay = day;
  renderCalendar();
  const page = await api("GET", `${userPath()}/diary?start=${enc(day)}`);
  $("#turns-title").textContent = t("dayTitle", day, page.entries.length);
  renderTurns(page.entries, () => openDay(day));
}

$("#search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  guarded(async () => {
    const q = $("#search-q").value.trim();
    if (!q) return;
    const params = new URLSearchParams({ q });
    if ($("#search-start").value) params.set("start", $("#search-start").value);
    if ($("#search-end").value) params.set("end", $("#search-end").value);
    const hits = await api("GET", `${userPath()}/diary/search?${params}`);
    $("#turns-title").textContent = t("searchTitle", q, hits.length);
    renderTurns(hits, () => $("#search-form").requestSubmit());
  });
});

function renderTurns(entries, reload) {
  if (!entries.length) { $("#turns").replaceChildren(el("p", {}, t("noTurns"))); return; }
  $("#turns").replaceChildren(...entries.map((e) => turnCard(e, reload)));
}

function turnCard(e, reload) {
  const meta = el("div", { class: "meta" }, el("span", {}, fmtTime(e.at)), el("span", {}, `${t("tag")}: ${e.tag}`));
  if (e.score !== undefined) meta.append(el("span", {}, `${t("score")} ${e.score.toFixed(3)}`));
  if (e.reason) meta.append(el("span", {}, e.reason));
  const card = el("div", { class: "turn", dataset: { id: e.id } }, meta,
    el("p", {}, el("span", { class: "who" }, `${t("userSaid")}:`), e.user),
    el("p", {}, el("span", { class: "who" }, `${t("charSaid")}:`), e.assistant));
  const actions = el("div", { class: "actions edit-only" },
    el("button", { type: "button", onclick: () => editTurn(card, e, reload) }, t("edit")),
    el("button", { type: "button", onclick: () => guarded(async () => {
      if (!confirm(t("confirmDelete"))) return;
      await api("DELETE", `${userPath()}/diary/${enc(e.id)}`);
      status(t("saved"));
      await loadDiaryDays();
      await reload();
    }) }, t("delete")));
  card.append(actions);
  return card;
}

async function loadDiaryDays() {
  const days = await api("GET", `${userPath()}/diary/days`);
  state.days = new Map(days.map((d) => [d.day, d.turns]));
  renderCalendar();
}

function editTurn(card, e, reload) {
  const user = el("textarea", { rows: 2, name: "user" }); user.value = e.user;
  const assistant = el("textarea", { rows: 3, name: "assistant" }); assistant.value = e.assistant;
  const tag = el("input", { name: "tag" }); tag.value = e.tag;
  card.replaceChildren(tag, user, assistant, el("div", { class: "actions" },
    el("button", { type: "button", onclick: () => guarded(async () => {
      await api("PATCH", `${userPath()}/diary/${enc(e.id)}`, { user: user.value, assistant: assistant.value, tag: tag.value });
      status(t("saved"));
      await reload();
    }) }, t("save")),
    el("button", { type: "button", onclick: () => reload() }, t("cancel"))));
}

// -- facts ----------------------------------------------------------------------------------------

async function loadFacts() {
  const deleted = $("#facts-deleted").checked;
  const facts = await api("GET", `${userPath()}/facts?include_deleted=${deleted}`);
  if (!facts.length) { $("#facts").replaceChildren(el("p", {}, t("noFacts"))); return; }
  $("#facts").replaceChildren(...facts.map(factCard));
}

function factCard(f) {
  const meta = el("div", { class: "meta" }, el("span", {}, `${t("learned")} ${fmtTime(f.learned_at)}`));
  if (f.updated_at) meta.append(el("span", {}, `${t("updated")} ${fmtTime(f.updated_at)}`));
  if (f.deleted_at) meta.append(el("span", {}, `${t("deleted")} ${fmtTime(f.deleted_at)}`));
  if (f.source_turns.length) meta.append(el("span", {}, `${t("sources")}: ${f.source_turns.join(", ")}`));
  const text = el("div", { class: "text" }, f.text);
  const card = el("div", { class: `fact${f.deleted_at ? " deleted" : ""}`, dataset: { id: f.id } }, text, meta);
  if (f.history.length) {
    card.append(el("div", { class: "history" }, `${t("history")}:`,
      el("ul", {}, ...f.history.map((r) => el("li", {}, `${r.text} (${r.change}, ${fmtTime(r.until)})`)))));
  }
  if (!f.deleted_at) {
    card.append(el("div", { class: "actions edit-only" },
      el("button", { type: "button", dataset: { action: "edit" }, onclick: () => editFact(card, f) }, t("edit")),
      el("button", { type: "button", onclick: () => guarded(async () => {
        if (!confirm(t("confirmDelete"))) return;
        await api("DELETE", `${userPath()}/facts/${enc(f.id)}`);
        status(t("saved"));
        await loadFacts();
      }) }, t("delete"))));
  }
  return card;
}

function editFact(card, f) {
  const input = el("input", { name: "fact" }); input.value = f.text;
  card.replaceChildren(input, el("div", { class: "actions" },
    el("button", { type: "button", dataset: { action: "save" }, onclick: () => guarded(async () => {
      await api("PUT", `${userPath()}/facts/${enc(f.id)}`, { text: input.value });
      status(t("saved"));
      await loadFacts();
    }) }, t("save")),
    el("button", { type: "button", onclick: () => guarded(loadFacts) }, t("cancel"))));
  input.focus();
}

$("#facts-deleted").addEventListener("change", () => guarded(loadFacts));
$("#fact-add").addEventListener("submit", (ev) => {
  ev.preventDefault();
  guarded(async () => {
    const text = $("#fact-text").value.trim();
    if (!text) return;
    await api("POST", `${userPath()}/facts`, { text });
    $("#fact-text").value = "";
    status(t("saved"));
    await loadFacts();
  });
});

// -- world book -----------------------------------------------------------------------------------

async function loadWorldBook() {
  const book = await api("GET", `${charPath()}/world-book/entries`);
  const problems = book.problems.map((p) => el("li", { class: "error" }, `${p.file}${p.line ? `:${p.line}` : ""}: ${p.message}`));
  $("#wb-problems").replaceChildren(...(problems.length ? problems : [el("li", {}, t("noProblems"))]));
  $("#wb-table tbody").replaceChildren(...book.entries.map((e) => el("tr", { dataset: { entry: e.id } },
    el("td", {}, `${e.file}${e.line ? `:${e.line}` : ""}`),
    el("td", {}, e.keys.join(", "), e.secondary_keys.length ? el("div", { class: "meta" }, e.secondary_keys.join(", ")) : ""),
    el("td", {}, e.logic), el("td", {}, e.content))));
}

$("#try-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  guarded(async () => {
    const message = $("#try-message").value;
    if (!message.trim()) return;
    const result = await api("POST", `${charPath()}/world-book/try`, { message });
    const hits = result.hits.map(hitCard);
    $("#try-result").replaceChildren(...(hits.length ? hits : [el("p", {}, t("noHits"))]),
      ...result.diagnostics.map((d) => el("p", { class: "error" }, d)));
  });
});

function hitCard(h) {
  return el("div", { class: "hit", dataset: { store: h.store } },
    el("div", {}, h.text),
    el("div", { class: "reason" }, `${h.store} · ${t("score")} ${h.score.toFixed(3)} · ${h.tokens} tok · ${h.reason}`));
}

// -- prompt preview -------------------------------------------------------------------------------

$("#prompt-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  guarded(async () => {
    const message = $("#prompt-message").value;
    if (!message.trim()) return;
    const body = { message };
    if ($("#prompt-now").value) body.now = $("#prompt-now").value;
    const r = await api("POST", `${userPath()}/prompt`, body);
    const tokenRows = Object.entries(r.tokens).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v)));
    $("#prompt-result").replaceChildren(
      el("h2", {}, t("hits")), ...(r.hits.length ? r.hits.map(hitCard) : [el("p", {}, "—")]),
      el("h2", {}, t("dropped")), ...(r.dropped.length ? r.dropped.map(hitCard) : [el("p", {}, "—")]),
      el("h2", {}, t("tokens")), el("table", { class: "tokens" }, el("tbody", {}, ...tokenRows)),
      ...(r.diagnostics.length ? [el("h2", {}, t("diagnostics")), el("ul", {}, ...r.diagnostics.map((d) => el("li", { class: "error" }, d)))] : []),
      el("h2", {}, t("messages")),
      el("div", { class: "messages" }, ...r.messages.map((m) => [el("div", { class: "role" }, m.role), el("pre", {}, m.content)])));
  });
});

// -- boot -----------------------------------------------------------------------------------------

if (!state.lang) state.lang = (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
applyLanguage();
guarded(start);
