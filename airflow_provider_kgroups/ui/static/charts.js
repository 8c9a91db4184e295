/* Charts of the Consumer groups page, drawn by Apache ECharts (vendored: echarts.min.js).
   Every text that comes from data goes through echarts.format.encodeHTML before ECharts puts
   it in a tooltip (tooltips are HTML). Exposes window.KgCharts. */
"use strict";
(function () {
  const enc = (s) => echarts.format.encodeHTML(String(s));
  const instances = new Set();
  const VERDICT_COLORS = { OK: "#16a34a", WARN: "#d97706", UNKNOWN: "#7c3aed", STALL: "#dc2626", STOP: "#dc2626", ABANDONED: "#dc2626",
                           REWIND: "#dc2626", AT_RISK: "#b91c1c", LOST: "#991b1b" };
  const CLEANUP_COLORS = { deleted: "#dc2626", would_delete: "#d97706", skip: "#64748b", keep: "#16a34a",
                           not_found: "#64748b", refused: "#b45309", failed: "#991b1b" };

  function theme() { return document.documentElement.classList.contains("dark") ? "dark" : null; }

  function init(el) {
    const old = echarts.getInstanceByDom(el);
    if (old) { instances.delete(old); old.dispose(); }
    const chart = echarts.init(el, theme(), { renderer: "canvas" });
    chart.kgEl = el;
    instances.add(chart);
    return chart;
  }

  function plotted(chart) {
    /* the points the chart holds (known values; null is a gap, not a point) */
    let n = 0;
    for (const s of chart.getOption().series || []) {
      if (String(s.id || "").startsWith("kg-")) n += (s.data || []).filter((d) => d && d[1] !== null && d[1] !== undefined).length;
    }
    return n;
  }

  function sparkline(el, points, buckets) {
    /* points: [slice, max lag] of the slices holding a snapshot (slices without one are skipped,
       so the line runs on); a null lag (unknown there) breaks the line */
    const chart = init(el);
    chart.setOption({
      backgroundColor: "transparent", animation: false, grid: { left: 3, right: 3, top: 3, bottom: 3 },
      xAxis: { type: "value", show: false, min: 0, max: buckets - 1 },
      yAxis: { type: "value", show: false, min: 0 },
      series: [{ type: "line", data: points, connectNulls: false, lineStyle: { width: 1.2 },
                 areaStyle: { opacity: 0.15 }, silent: true,
                 showSymbol: points.filter((p) => p[1] !== null).length < 6, symbolSize: 5 }],
    });
    return chart;
  }

  function formatSeconds(s) {
    if (s === null || s === undefined) return "unknown";
    if (s < 90) return s.toFixed(0) + " s";
    if (s < 5400) return (s / 60).toFixed(1) + " min";
    if (s < 172800) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " d";
  }

  function eventLines(events) {
    /* verdict changes and cleanup events as vertical lines on the time axis */
    return events.map((e) => ({ xAxis: e.at_ms, name: e.label, lineStyle: { color: e.color, type: e.dash ? "dashed" : "solid" },
                                label: { formatter: e.short, color: e.color, fontSize: 10, position: "insideEndTop" } }));
  }

  function lowerBoundAreas(data) {
    /* stretches where the (total) seconds are only a lower bound: shaded, labelled "at least" */
    const out = [];
    let start = null, last = null;
    for (const d of data) {
      if (d[2]) { if (start === null) start = d[0]; last = d[0]; }
      else if (start !== null) { out.push([{ xAxis: start, name: "at least (older than the history)" }, { xAxis: last }]); start = null; }
    }
    if (start !== null) out.push([{ xAxis: start, name: "at least (older than the history)" }, { xAxis: last }]);
    return out;
  }

  function timeChart(el, opts) {
    /* opts: {series: [{name, data: [[t, v(, atLeast)]]}], unit: "records"|"seconds", thresholds: [{value, label}],
              events: [{at_ms, label, short, color, dash}], group} */
    const chart = init(el);
    const seconds = opts.unit === "seconds";
    const bounds = seconds && opts.series.length ? lowerBoundAreas(opts.series[0].data) : [];
    const series = opts.series.map((s, i) => ({
      id: "kg-" + i, name: s.name, type: "line", data: s.data, showSymbol: false, connectNulls: false,
      sampling: "lttb", large: true, emphasis: { focus: "series" },
      lineStyle: { width: s.name === "total" ? 2.2 : 1.4 },
      markLine: i === 0 ? {
        symbol: "none", silent: false,
        data: [...(opts.thresholds || []).map((t) => ({ yAxis: t.value, name: t.label,
                 lineStyle: { color: "#dc2626", type: "dashed" },
                 label: { formatter: t.label, position: "insideEndTop", color: "#dc2626", fontSize: 10 } })),
               ...eventLines(opts.events || [])],
      } : undefined,
      markArea: i === 0 && bounds.length ? { silent: true, itemStyle: { color: "rgba(124,58,237,0.08)" },
        label: { color: "#7c3aed", fontSize: 10, position: "insideTop" }, data: bounds } : undefined,
    }));
    chart.setOption({
      backgroundColor: "transparent", animation: false,
      title: { text: opts.title, left: 8, top: 4, textStyle: { fontSize: 13 } },
      legend: { type: "scroll", top: 24, left: 8, right: 16 },
      grid: { left: 64, right: 24, top: 64, bottom: 56 },
      tooltip: { trigger: "axis", confine: true, formatter: (items) => {
        if (!items.length) return "";
        const head = enc(new Date(items[0].value[0]).toISOString().replace("T", " ").slice(0, 19) + " UTC");
        const rows = items.map((it) => {
          const v = it.value[1];
          const text = v === null || v === undefined ? "unknown" :
            (seconds ? (it.value[2] ? "at least " : "") + formatSeconds(v) : Number(v).toLocaleString() + " records");
          return `${it.marker}${enc(it.seriesName)}: ${enc(text)}`;
        });
        return [head, ...rows].join("<br>");
      } },
      xAxis: { type: "time", max: (v) => Math.max(v.max, ...(opts.events || []).map((e) => e.at_ms)) },
      yAxis: { type: "value", min: 0,
               max: (v) => Math.max(v.max, ...(opts.thresholds || []).map((t) => t.value * 1.08)),
               axisLabel: { formatter: seconds ? (v) => formatSeconds(v) : undefined } },
      dataZoom: [{ type: "inside" }, { type: "slider", height: 18, bottom: 8 }],
      series,
    });
    return chart;
  }

  function retheme() {
    /* ECharts themes are fixed at init: redraw every chart with the new one */
    for (const chart of Array.from(instances)) {
      if (chart.isDisposed()) { instances.delete(chart); continue; }
      const option = chart.getOption();
      const el = chart.kgEl;
      const fresh = init(el);
      fresh.setOption(option);
    }
  }

  window.addEventListener("resize", () => { for (const c of instances) if (!c.isDisposed()) c.resize(); });
  window.KgCharts = { sparkline, timeChart, plotted, retheme, formatSeconds, VERDICT_COLORS, CLEANUP_COLORS,
                      connect: (charts) => echarts.connect(charts) };
})();
