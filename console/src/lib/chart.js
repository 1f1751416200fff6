// The usage chart (SPEC-CONSOLE §2's series): booked input and output tokens, requests and
// failures per minute, hour or day, drawn by uPlot. `load(query)` fetches a usage_series.
import uPlot from 'uplot';
import { h, fill, statusLine } from './dom.js';
import { int, utc } from './format.js';
import { isMissingRoute } from './api.js';

// How many buckets each choice shows: an hour of minutes, a day of hours, a month of days.
const spans = {
  minute: { buckets: 60, ms: 60_000, label: 'Minute' },
  hour: { buckets: 24, ms: 3_600_000, label: 'Hour' },
  day: { buckets: 30, ms: 86_400_000, label: 'Day' },
};
const chart_height_px = 260;

function plotOptions(width) {
  const tokens = { scale: 'tokens', width: 2, paths: uPlot.paths.stepped({ align: 1 }) };
  return {
    width, height: chart_height_px,
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, tokens: {}, requests: {} },
    axes: [
      {},
      { scale: 'tokens', label: 'tokens', size: 70 },
      { scale: 'requests', label: 'requests', side: 1, grid: { show: false } },
    ],
    series: [
      { value: (u, v) => (v === null ? '–' : utc(new Date(v * 1000).toISOString())) },
      { ...tokens, label: 'Input tokens', stroke: '#2f6fb3', fill: 'rgba(47,111,179,0.12)' },
      { ...tokens, label: 'Output tokens', stroke: '#b35f2f', fill: 'rgba(179,95,47,0.12)' },
      { label: 'Requests', scale: 'requests', stroke: '#3a8a3a', width: 2, dash: [6, 3] },
      { label: 'Failed', scale: 'requests', stroke: '#c0392b', width: 1.5 },
    ],
  };
}

export function usageChart(load) {
  let bucket = 'hour';
  let plot = null;
  let last = null;
  const plotBox = h('div', { class: 'plot' });
  const summary = h('p', { class: 'chart-summary', 'data-field': 'chart-summary' }, 'Loading…');
  const status = statusLine();
  const rows = h('tbody');
  const buttons = Object.entries(spans).map(([name, s]) =>
    h('button', { type: 'button', 'aria-pressed': String(name === bucket), 'data-bucket': name,
      onclick: (ev) => {
        bucket = name;
        for (const b of buttons) b.setAttribute('aria-pressed', String(b === ev.currentTarget));
        refresh();
      } },
    s.label));
  const el = h('section', { class: 'usage-chart', 'aria-label': 'Usage over time' },
    h('div', { class: 'chart-head' },
      h('h2', {}, 'Usage over time'),
      h('div', { class: 'segmented', role: 'group', 'aria-label': 'Bucket' }, buttons)),
    h('figure', {}, plotBox, h('figcaption', {}, summary)),
    status,
    h('details', {}, h('summary', {}, 'Buckets with traffic, as a table'),
      h('div', { class: 'table-wrap' }, h('table', {},
        h('thead', {}, h('tr', {}, ['Start', 'Input', 'Output', 'Requests', 'Failed', 'Pending'].map((t) => h('th', { scope: 'col' }, t)))),
        rows))));

  function draw(series) {
    const d = series.data;
    const data = [
      d.map((b) => Date.parse(b.start) / 1000),
      d.map((b) => b.input_tokens),
      d.map((b) => b.output_tokens),
      d.map((b) => b.requests),
      d.map((b) => b.failed),
    ];
    const width = Math.max(240, plotBox.clientWidth || 600);
    if (!plot) plot = new uPlot(plotOptions(width), data, plotBox);
    else plot.setData(data);
    const sum = (f) => d.reduce((acc, b) => acc + b[f], 0);
    const totals = { input: sum('input_tokens'), output: sum('output_tokens'), requests: sum('requests'),
      failed: sum('failed'), pending: sum('usage_pending') };
    summary.dataset.requests = totals.requests;
    summary.dataset.inputTokens = totals.input;
    summary.textContent = `Last ${d.length} ${bucket}s: ${int(totals.requests)} requests (${int(totals.failed)} failed, ` +
      `${int(totals.pending)} usage pending); ${int(totals.input)} input and ${int(totals.output)} output tokens booked.`;
    fill(rows, d.filter((b) => b.requests || b.input_tokens || b.output_tokens).map((b) =>
      h('tr', {}, h('td', {}, utc(b.start)), [b.input_tokens, b.output_tokens, b.requests, b.failed, b.usage_pending].map((v) => h('td', { class: 'num' }, int(v))))));
  }

  async function refresh() {
    const s = spans[bucket];
    const from = new Date(Date.now() - (s.buckets - 1) * s.ms).toISOString().replace(/\.\d+Z$/, 'Z');
    const wanted = bucket;
    try {
      const series = await load({ bucket, from });
      if (wanted !== bucket) return;  // another choice was made meanwhile
      last = series;
      draw(series);
      status.say('');
    } catch (e) {
      if (isMissingRoute(e)) {
        summary.textContent = 'Usage over time is not served by this gateway yet (its usage route answered 404).';
      } else {
        status.say(`Usage series: ${e.message}`, 'error');
      }
    }
  }

  new ResizeObserver(() => {
    if (plot && plotBox.clientWidth > 0) plot.setSize({ width: plotBox.clientWidth, height: chart_height_px });
  }).observe(plotBox);
  el.refresh = refresh;
  el.last = () => last;
  return el;
}
