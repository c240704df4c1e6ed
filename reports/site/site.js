// The site's behaviour: sortable tables, the base selector, and the charts (plotly.js,
// vendored beside this file). Every figure is computed when the page is rendered; this script
// only chooses which one to show.
"use strict";

function sortKey(cell) {
  const raw = cell.getAttribute("data-sort");
  const text = raw === null ? cell.textContent.trim() : raw;
  const number = parseFloat(text);
  return text !== "" && !isNaN(number) && /^[-+0-9.eE]+$/.test(text) ? number : text;
}

function sortBy(header) {
  const table = header.closest("table");
  const body = table.tBodies[0];
  const column = Array.from(header.parentNode.children).indexOf(header);
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  table.querySelectorAll("th").forEach((th) => th.removeAttribute("aria-sort"));
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = sortKey(a.cells[column]);
    const y = sortKey(b.cells[column]);
    const blank = (v) => v === "" || v === "—";
    if (blank(x) !== blank(y)) return blank(x) ? 1 : -1; // blanks last either way
    const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return ascending ? order : -order;
  });
  rows.forEach((row) => body.appendChild(row));
}

function showBase(key) {
  const select = document.getElementById("base");
  const label = select ? select.options[select.selectedIndex].text.split(" (")[0] : key;
  document.querySelectorAll(".base-name").forEach((span) => (span.textContent = label));
  document.querySelectorAll("td.ratio").forEach((cell) => {
    const ratio = cell.getAttribute("data-ratio-" + key);
    if (ratio) {
      const verdict = cell.getAttribute("data-verdict-" + key);
      const kind = cell.getAttribute("data-kind-" + key);
      // The ratio as bench.md prints it, written by the build: rounding it again here could
      // print a figure 0.01 away from the page's.
      const shown = cell.getAttribute("data-shown-" + key);
      cell.textContent = shown + (kind ? " (" + kind + ")" : "");
      cell.setAttribute("data-sort", ratio);
      const interval = cell.getAttribute("data-interval-" + key);
      cell.title = "95% interval of the ratio, within one session: " + interval +
        (verdict ? "; " + verdict : "");
    } else {
      cell.textContent = "—";
      cell.setAttribute("data-sort", "");
      cell.title = cell.getAttribute("data-why-" + key) || "";
    }
  });
}

function drawCharts() {
  document.querySelectorAll("div.chart").forEach((div) => {
    const figure = JSON.parse(document.getElementById(div.id + "-figure").textContent);
    const zoom = div.getAttribute("data-zoom") === "scroll";
    Plotly.newPlot(div, figure.data, figure.layout, {
      displaylogo: false,
      responsive: true,
      scrollZoom: zoom,
    }).then(() => div.setAttribute("data-rendered", "yes"));
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table.sortable th").forEach((th) => {
    th.addEventListener("click", () => sortBy(th));
    th.title = "click to sort";
  });
  const select = document.getElementById("base");
  if (select) {
    select.addEventListener("change", () => showBase(select.value));
    showBase(select.value);
  }
  drawCharts();
});
