/* The Consumer groups page: overview (#/), one group (#/group?id=...), cleanup trail (#/cleanups).
   Data from this app's JSON API (relative URLs: the page lives under the api-server's /kgroups/).
   Text from the data is only ever set with textContent, never parsed as HTML. */
"use strict";
(function () {
  const view = () => document.getElementById("view");
  const PAGE_SIZE = 50;
  const state = { window: "14d", pattern: "", sort: "lag", order: "desc", page: 0 };

  /* -- theme: follow the Airflow UI around the page (same origin: its <html> class and the
        next-themes "theme" key), else ?theme=, else the system's preference ---------------- */
  function airflowTheme() {
    const asked = new URLSearchParams(location.search).get("theme");
    if (asked === "dark" || asked === "light") return asked;
    try {
      const root = window.parent !== window ? window.parent.document.documentElement : null;
      if (root && root.classList.contains("dark")) return "dark";
      if (root && root.classList.contains("light")) return "light";
    } catch (e) { /* not framed by Airflow */ }
    try {
      const stored = localStorage.getItem("theme");
      if (stored === "dark" || stored === "light") return stored;
    } catch (e) { /* storage blocked */ }
    return window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  function applyTheme() {
    const dark = airflowTheme() === "dark";
    if (dark !== document.documentElement.classList.contains("dark")) {
      document.documentElement.classList.toggle("dark", dark);
      if (window.KgCharts) KgCharts.retheme();
    }
  }
  function watchTheme() {
    applyTheme();
    window.addEventListener("storage", applyTheme);
    try {
      if (window.parent !== window) {
        new MutationObserver(applyTheme).observe(window.parent.document.documentElement,
                                                 { attributes: true, attributeFilter: ["class", "style"] });
      }
    } catch (e) { /* not framed by Airflow */ }
  }

  /* -- small DOM helpers ------------------------------------------------------------------ */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = v; else if (k === "onclick") node.addEventListener("click", v);
      else if (k === "onchange") node.addEventListener("change", v); else if (k === "oninput") node.addEventListener("input", v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
    return node;
  }
  const fmtInt = (n) => (n === null || n === undefined ? "unknown" : Number(n).toLocaleString("en-US"));
  const fmtTime = (ms) => (ms === null || ms === undefined ? "-" : new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC");
  const fmtSeconds = (s, atLeast) => (s === null || s === undefined ? "unknown" : (atLeast ? "≥ " : "") + KgCharts.formatSeconds(s));
  const badge = (text, cls) => el("span", { class: `badge v-${cls || text}`, text });
  async function api(path, options) {
    const response = await fetch(path, Object.assign({ credentials: "same-origin", headers: { Accept: "application/json" } }, options || {}));
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(`${response.status}: ${body.detail || response.statusText}`);
    return body;
  }
  function fail(error) { view().replaceChildren(el("p", { class: "error", text: String(error.message || error) })); }
  /* a 202: the api-server is still preparing the answer (the first open of a store): show how far, ask again */
  function preparing(data, again) {
    const p = data.preparing, hash = location.hash;
    view().replaceChildren(el("p", { class: "muted", id: "preparing", text: p.of ?
      `Rolling up the history for this page (once per store): ${fmtInt(p.files)} of ${fmtInt(p.of)} files…` :
      "Preparing the answer…" }));
    setTimeout(() => { if (location.hash === hash) again(); }, 1000);
  }
  function windowSelect(current, onchange) {
    return el("select", { id: "window", onchange },
      ...["1h", "6h", "24h", "3d", "7d", "14d", "30d"].map((w) => el("option", { value: w, selected: w === current, text: `last ${w}` })));
  }
  function asOf(data) {
    document.getElementById("as-of").textContent = data.as_of_ms ? `history as of ${fmtTime(data.as_of_ms)}` : "no history yet";
    if (data.rollup_cache) document.getElementById("as-of").title = `rollups saved ${data.rollup_cache}`;
  }

  /* -- overview ------------------------------------------------------------------------------ */
  async function overview() {
    const q = new URLSearchParams({ window: state.window, sort: state.sort, order: state.order });
    if (state.pattern) q.set("pattern", state.pattern);
    let data;
    try { data = await api(`api/groups?${q}`); } catch (e) { return fail(e); }
    if (data.preparing) return preparing(data, overview);
    asOf(data);
    let timer = null;
    const filter = el("input", { id: "pattern", type: "search", placeholder: "filter: orders-*, re:^eu-.*, or a word",
                                 value: state.pattern, size: 36, oninput: (ev) => {
      clearTimeout(timer); timer = setTimeout(() => { state.pattern = ev.target.value.trim(); state.page = 0; overview(); }, 300); } });
    const head = (label, key, cls) => el("th", { class: key ? `sortable ${cls || ""}` : cls, onclick: key ? () => {
      state.order = state.sort === key && state.order === "desc" ? "asc" : "desc"; state.sort = key; overview(); } : null,
      text: label + (state.sort === key ? (state.order === "desc" ? " ▼" : " ▲") : "") });
    const rows = data.groups.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE);
    const sparks = [];
    const body = rows.map((g) => {
      const spark = el("div", { class: "spark" });
      sparks.push([spark, g.sparkline]);
      const gone = g.deleted && !g.deleted.seen_since;  // deleted after its last snapshot: no report of it
      const dead = gone ? null : g.dead;
      const deadCell = el("td", {}, dead ? badge(dead.candidate ? "dead-group candidate" : dead.health, dead.health) : null);
      if (dead) deadCell.append(el("div", { class: "muted", text: dead.evidence[0] }));
      if (g.deleted) {  // a cleanup run deleted it (audit record); its page has the restore command
        deadCell.append(badge(g.deleted.seen_since ? "deleted, seen again" : "deleted by cleanup", g.deleted.seen_since ? "paused" : "dead"),
          el("div", { class: "muted deleted", title: g.deleted.restore || "", text: `at ${fmtTime(g.deleted.at_ms)}` +
            (g.deleted.seen_since ? ", in snapshots since" : "; undo: see its page") }));
      }
      if (!dead && !g.deleted) deadCell.append("-");
      return el("tr", { "data-group": g.group_id, class: gone ? "gone" : null },
        el("td", {}, el("a", { class: "gid", title: g.group_id, href: `#/group?${new URLSearchParams({ id: g.group_id, window: state.window })}`, text: g.group_id })),
        el("td", { text: `${g.state} (${g.members})` }),
        el("td", { class: "num lag", text: fmtInt(g.total_lag) }),
        el("td", { class: "num", text: fmtSeconds(g.lag_seconds, g.lag_seconds_at_least) }),
        el("td", { title: g.verdict_reason }, badge(g.verdict)),
        el("td", { class: "num", text: (g.idle_at_least ? "≥ " : "") + KgCharts.formatSeconds(g.idle_ms / 1000) }),
        el("td", {}, spark), deadCell);
    });
    const pages = Math.max(1, Math.ceil(data.groups.length / PAGE_SIZE));
    view().replaceChildren(
      el("div", { class: "controls" }, filter, windowSelect(state.window, (ev) => { state.window = ev.target.value; overview(); }),
         el("span", { class: "muted", id: "shown", text: `${data.shown} of ${data.total_groups} groups` })),
      el("table", { id: "groups" }, el("thead", {}, el("tr", {}, head("Group", "name"), el("th", { text: "State (members)" }),
          head("Total lag", "lag", "num"), head("Lag in seconds", "seconds", "num"), el("th", { text: "Verdict" }),
          head("No commit progress", "idle", "num"), el("th", { text: `Total lag, last ${state.window}` }),
          el("th", { text: "Dead-group candidate / cleanup" }))), el("tbody", {}, ...body)),
      el("div", { class: "pager" },
         el("button", { disabled: state.page === 0, onclick: () => { state.page -= 1; overview(); }, text: "previous" }),
         el("span", { class: "muted", text: `page ${state.page + 1} of ${pages}` }),
         el("button", { disabled: state.page + 1 >= pages, onclick: () => { state.page += 1; overview(); }, text: "next" })),
      el("p", { class: "muted", text: "Lag in seconds is estimated from the history's log-end samples (≥: a lower bound). " +
        `Dead-group candidates are judged from the history alone with idle_hours=${data.idle_hours}; the cleanup reads Kafka again before it deletes.` }));
    if (document.activeElement !== filter && state.pattern) { filter.focus(); filter.setSelectionRange(filter.value.length, filter.value.length); }
    for (const [node, points] of sparks) KgCharts.sparkline(node, points, data.spark_buckets);
  }

  /* -- one group ------------------------------------------------------------------------------ */
  function thresholds(gates, unit) {
    const out = [];
    for (const g of gates) {
      const t = g.thresholds || {};
      const pick = unit === "seconds" ? ["max_lag_seconds"] : ["max_total_lag"];
      for (const name of pick) if (t[name] && t[name].value !== undefined) out.push({ value: t[name].value, label: `${g.dag_id}.${g.task_id} ${name}` });
    }
    return out;
  }
  function events(data) {
    const out = data.verdicts.changes.map((c) => ({ at_ms: c.at_ms, label: `${c.verdict}: ${c.reason}`, short: c.verdict,
                                                   color: KgCharts.VERDICT_COLORS[c.verdict] || "#64748b", dash: true }));
    for (const c of data.cleanups) {
      const d = c.decision.decision;
      const what = c.action === "delete-groups" ? "cleanup" : c.action;  // an offset change: reset-offsets, ...
      out.push({ at_ms: c.started_ms, label: `${what}: ${d}`, short: `${what} ${d}`, color: KgCharts.CLEANUP_COLORS[d] || "#64748b" });
    }
    return out;
  }
  function card(k, v, id) { return el("div", { class: "card" }, el("div", { class: "k", text: k }), el("div", { class: "v", id, text: v })); }
  function list(items) { return el("ul", { class: "evidence" }, ...items.map((t) => el("li", { text: t }))); }

  async function group(params) {
    const id = params.get("id");
    const win = params.get("window") || state.window;
    const perPartition = params.get("partitions") === "1";
    const q = new URLSearchParams({ id, window: win, partitions: perPartition ? "1" : "0" });
    if (params.get("points")) q.set("points", params.get("points"));
    let data;
    try { data = await api(`api/group?${q}`); } catch (e) { return fail(e); }
    if (data.preparing) return preparing(data, () => group(params));
    asOf(data);
    const go = (changes) => { const p = new URLSearchParams({ id, window: win, partitions: perPartition ? "1" : "0", ...changes }); location.hash = `#/group?${p}`; };
    const latest = data.latest || {};
    const live = el("section", { id: "live" });
    const refresh = el("button", { id: "refresh", text: "refresh now", onclick: async () => {
      refresh.disabled = true; live.replaceChildren(el("p", { class: "muted", text: "reading Kafka (one snapshot, with a deadline)..." }));
      try { renderLive(live, await api(`api/group/refresh?${new URLSearchParams({ id })}`, { method: "POST", headers: { Accept: "application/json", "X-Requested-With": "kgroups" } })); }
      catch (e) { live.replaceChildren(el("p", { class: "error", text: String(e.message || e) })); }
      refresh.disabled = false; } });
    const parts = [
      el("h2", {}, "Group ", el("span", { class: "mono", id: "group-id", text: id })),
      el("div", { class: "controls" }, windowSelect(win, (ev) => go({ window: ev.target.value })),
         el("label", {}, el("input", { type: "checkbox", id: "per-partition", checked: perPartition, onchange: (ev) => go({ partitions: ev.target.checked ? "1" : "0" }) }), " one line per partition"),
         refresh),
    ];
    if (!data.found) {
      parts.push(el("p", { class: "muted", id: "not-found", text: `No snapshot of this group in the last ${win} of the history.` }));
      view().replaceChildren(...parts);
      parts.length = 0;
    } else {
      const worst = (latest.partitions || []).reduce((a, p) => (p.lag_seconds !== null && (a === null || p.lag_seconds > a.lag_seconds) ? p : a), null);
      parts.push(el("div", { class: "cards" }, card("latest total lag", fmtInt(latest.total_lag), "latest-lag"),
        card("lag in seconds (estimate)", worst ? fmtSeconds(worst.lag_seconds, worst.lag_seconds_at_least) : "unknown", "latest-seconds"),
        card("state (members)", `${latest.state} (${latest.members})`, "latest-state"),
        card("verdict", data.in_latest && data.verdicts.changes.length ? data.verdicts.changes[data.verdicts.changes.length - 1].verdict
             : "UNKNOWN", "latest-verdict"),  // not in the newest snapshot: unknown now, as the overview says
        card("latest snapshot", fmtTime(data.last_seen_ms), "latest-at")));
      const lagEl = el("div", { class: "chart", id: "chart-lag" });
      const secEl = el("div", { class: "chart", id: "chart-seconds" });
      const counts = el("p", { class: "muted", id: "points" });
      parts.push(lagEl, secEl, counts);
      view().replaceChildren(...parts);
      const ev = events(data);
      const c1 = KgCharts.timeChart(lagEl, { title: "Lag (records)", series: data.charts.lag.series, unit: "records", thresholds: thresholds(data.gates, "records"), events: ev });
      const c2 = KgCharts.timeChart(secEl, { title: "Lag in seconds (estimated from the history)", series: data.charts.seconds.series, unit: "seconds", thresholds: thresholds(data.gates, "seconds"), events: ev });
      KgCharts.connect([c1, c2]);
      window.kgCharts = { lag: c1, seconds: c2 };
      const p1 = KgCharts.plotted(c1), p2 = KgCharts.plotted(c2);
      counts.dataset.lagPoints = p1; counts.dataset.secondsPoints = p2;
      counts.textContent = `${p1.toLocaleString("en-US")} + ${p2.toLocaleString("en-US")} points plotted` +
        (data.charts.lag.raw_points > p1 ? ` (downsampled from ${data.charts.lag.raw_points.toLocaleString("en-US")} + ${data.charts.seconds.raw_points.toLocaleString("en-US")}, at most ${data.points_budget.toLocaleString("en-US")} a chart)` : "") +
        `; ${data.snapshots} snapshots; verdicts judged at ${data.verdicts.judged} of them.`;
      parts.length = 0;
    }
    const more = [];
    more.push(el("section", { id: "gates" }, el("h2", { text: "DAGs gating on it" }), data.gates.length ?
      el("table", {}, el("tr", {}, ...["DAG", "task", "mode", "selected by", "thresholds"].map((h) => el("th", { text: h }))),
        ...data.gates.map((g) => el("tr", {}, el("td", { text: g.dag_id }), el("td", { text: g.task_id }), el("td", { text: g.lag_mode }), el("td", { text: g.selected }),
          el("td", { text: Object.entries(g.thresholds).map(([k, v]) => `${k}=${v.value !== undefined ? v.value : v.template}`).join(", ") || "-" })))) :
      el("p", { class: "muted", text: "No DAG you may read gates on this group." })));
    if (data.found) {
      more.push(el("section", { id: "partitions" }, el("h2", { text: `Latest snapshot (${fmtTime(latest.at_ms)}): ${latest.state}, ${latest.members} member(s)` }),
        el("table", {}, el("tr", {}, ...["topic", "partition", "committed", "log end", "lag", "lag in seconds", "flags"].map((h, i) =>
            el("th", { text: h, class: i >= 1 && i <= 5 ? "num" : null }))),
          ...latest.partitions.map((p) => el("tr", {}, el("td", { text: p.topic }), el("td", { class: "num", text: p.partition }), el("td", { class: "num", text: fmtInt(p.committed) }),
            el("td", { class: "num", text: fmtInt(p.log_end) }), el("td", { class: "num", text: fmtInt(p.lag) }), el("td", { class: "num", text: fmtSeconds(p.lag_seconds, p.lag_seconds_at_least) }),
            el("td", { text: p.flags.join(", ") }))))),
        el("p", { class: "muted", text: "The history keeps each snapshot's member count, not the members: press \"refresh now\" for the members and their assignments." }),
        live);
      if (data.dead) more.push(el("section", { id: "evidence" }, el("h2", {}, "Dead-group evidence ", badge(data.dead.health)), list(data.dead.evidence),
        el("p", { class: "muted", text: `Judged from the history alone (idle_hours=${data.dead.idle_hours}); topics are not checked by name here.` })));
      more.push(el("section", { id: "verdicts" }, el("h2", { text: "Verdict changes" }), list(data.verdicts.changes.map((c) => `${fmtTime(c.at_ms)}  ${c.verdict}: ${c.reason}`))));
    } else more.push(live);
    more.push(el("section", { id: "cleanups" }, el("h2", { text: "Cleanup runs that judged it" }), data.cleanups.length ?
      el("div", {}, ...data.cleanups.map((c) => el("div", { class: "cleanup" },
        el("p", {}, badge(c.decision.decision, c.decision.decision === "deleted" ? "dead" : c.decision.health || "UNKNOWN"), ` ${fmtTime(c.started_ms)} `,
           el("span", { class: "muted", text: `${c.dry_run ? "dry run" : "real run"}, ${c.who.dag_id ? `${c.who.dag_id}.${c.who.task_id}` : "CLI"}, audit ${c.audit}` })),
        el("p", { text: c.decision.reason }),
        c.restore ? el("div", { class: "restore" }, el("p", {}, "Undo this deletion (offsets backed up to ",
          el("a", { href: `api/backups/${encodeURIComponent(c.backup)}`, target: "_blank", text: c.backup }), "):"),
          el("pre", { class: "cmd restore-cli", text: c.restore.cli }), el("pre", { class: "cmd restore-hook", text: c.restore.hook })) : null))) :
      el("p", { class: "muted", text: "No cleanup run has judged this group." })));
    view().append(...parts, ...more);
  }

  /* the shortest retention margin of the measured partitions: at least how long before retention may delete an unread record */
  function marginLine(m) {
    if (!m) return null;
    if (m.seconds === null) return el("p", { id: "margin", class: "muted", text: `retention margin: none known (${(m.reasons || []).join("; ") || "nothing unread"})` });
    return el("p", { id: "margin" }, m.below_floor_s ? badge("AT_RISK") : null,
      ` retention margin: at least ${fmtSeconds(Math.max(m.seconds, 0), false)} on ${m.topic}[${m.partition}] before retention (retention.ms=${m.retention_ms}) may delete its first unread record`);
  }

  function renderLive(node, data) {
    if (!data.ok) return node.replaceChildren(el("p", { class: "error", text: `refresh failed (${data.conn_id}): ${data.error}` }));
    const rows = (data.members || []).map((m) => el("tr", {}, el("td", { class: "mono", text: m.member_id }), el("td", { text: m.client_id }), el("td", { text: m.client_host }),
      el("td", { text: Object.entries(m.assignment).map(([t, ps]) => `${t}[${ps.join(",")}]`).join(" ") || "-" })));
    node.replaceChildren(el("h2", { text: `Live at ${fmtTime(data.taken_at_ms)} (not stored): ${data.state || "?"}, total lag ${fmtInt(data.total_lag)}` }),
      data.lag_error ? el("p", { class: "error", text: data.lag_error }) : null,
      marginLine(data.retention_margin),
      el("table", { id: "members" }, el("tr", {}, ...["member", "client id", "host", "assignment"].map((h) => el("th", { text: h }))), ...rows),
      rows.length ? null : el("p", { class: "muted", text: "No members." }));
  }

  /* -- cleanup trail ---------------------------------------------------------------------- */
  async function cleanups() {
    let data;
    try { data = await api("api/cleanups"); } catch (e) { return fail(e); }
    const runs = data.runs.map((r) => el("section", { class: "run" },
      el("h2", {}, `${fmtTime(r.started_ms)} ${r.action} `, badge(r.dry_run ? "dry run" : "real run", r.dry_run ? "OK" : "WARN"),
         el("span", { class: "muted", text: ` ${r.who.dag_id ? `${r.who.dag_id}.${r.who.task_id} (${r.who.run_id})` : "CLI"}; audit ${r.audit}` })),
      r.interrupted ? el("p", { class: "interrupted" }, badge("interrupted", "WARN"),
        ` this run died before its outcome (${r.interrupted.why}); reconciled ${fmtTime(r.interrupted.reconciled_ms)} by run ${(r.interrupted.reconciled_by || {}).run_id || "?"}`) : null,
      r.backup ? el("p", {}, "Backup: ", el("a", { href: `api/backups/${encodeURIComponent(r.backup)}`, target: "_blank", text: r.backup })) : null,
      r.restore ? el("pre", { class: "cmd", text: r.restore.cli }) : null,
      !r.restore && (r.undo || []).length ? el("div", { class: "undo" }, el("p", { text: "Undo (each group from the backup taken before its first change):" }),
        ...r.undo.map((u) => el("pre", { class: "cmd", text: u.cli }))) : null,
      (r.reconciled || []).length ? el("p", { class: "muted", text: `Reconciled interrupted run(s): ${r.reconciled.map((x) => x.audit).join(", ")}` }) : null,
      el("table", {}, el("tr", {}, ...["group", "decision", "why"].map((h) => el("th", { text: h }))),
        ...r.decisions.map((d) => el("tr", {}, el("td", {}, el("a", { href: `#/group?${new URLSearchParams({ id: d.group_id })}`, text: d.group_id })),
          el("td", {}, badge(d.decision, d.decision === "deleted" ? "dead" : d.decision === "keep" ? "OK" : "WARN")), el("td", { text: d.reason }))))));
    const open = (data.open || []).length ? [el("section", { class: "open-runs" }, el("h2", { text: "Runs with an intent but no outcome yet" }),
      el("p", { class: "muted", text: "Running now, or died mid-change and not reconciled yet: the next run that changes groups in this store writes their outcome." }),
      el("table", {}, el("tr", {}, ...["started", "action", "who", "process", "groups", "backup"].map((h) => el("th", { text: h }))),
        ...data.open.map((o) => el("tr", {}, el("td", { text: fmtTime(o.started_ms) }), el("td", { text: o.action || "?" }),
          el("td", { text: o.who.dag_id ? `${o.who.dag_id}.${o.who.task_id}` : (o.who.by || "CLI") }),
          el("td", { text: `${o.owner.pid || "?"} on ${o.owner.host || "?"}` }), el("td", { text: o.groups.join(", ") }),
          el("td", { text: o.backup_url || "" })))))] : [];
    view().replaceChildren(...open, ...(runs.length ? runs : [el("p", { class: "muted", text: "No cleanup run has written an audit record to this history store." })]));
  }

  function route() {
    const hash = location.hash || "#/";
    const [path, query] = hash.slice(1).split("?");
    const params = new URLSearchParams(query || "");
    if (path === "/group" && params.get("id")) return group(params);
    if (path === "/cleanups") return cleanups();
    if (params.get("window")) state.window = params.get("window");  // #/?window=6h: a link to a window
    return overview();
  }
  window.addEventListener("hashchange", route);
  document.addEventListener("DOMContentLoaded", () => { watchTheme(); route(); });
})();
