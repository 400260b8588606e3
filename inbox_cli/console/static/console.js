// The console's only script (the Content-Security-Policy allows no inline one): draws the overview's charts from
// the JSON the page carries, and follows a running replay. Text goes in with textContent, never as HTML.
"use strict";

const STATUS_COLOURS = {
  pending: "#d9a400",
  processed: "#2e8540",
  ignored: "#8c8c8c",
  failed: "#c0392b",
};

function jsonOf(id) {
  const element = document.getElementById(id);
  return element ? JSON.parse(element.textContent) : null;
}

function drawFlowCharts() {
  const flow = jsonOf("flow-data");
  if (!flow) return;
  document.querySelectorAll("canvas.flow-chart").forEach((canvas) => {
    const byStatus = flow.sources[canvas.dataset.source];
    new Chart(canvas, {
      type: "bar",
      data: {
        labels: flow.labels,
        datasets: Object.keys(byStatus).map((status) => ({
          label: status,
          data: byStatus[status],
          backgroundColor: STATUS_COLOURS[status] || "#4a6fa5",
        })),
      },
      options: {
        animation: false,
        responsive: true,
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
      },
    });
  });
}

function drawDeadLetterChart() {
  const queues = jsonOf("dlq-data");
  const canvas = document.getElementById("dlq-chart");
  if (!queues || !canvas) return;
  new Chart(canvas, {
    type: "bar",
    data: {
      labels: queues.map((queue) => queue.queue),
      datasets: [
        { label: "messages", data: queues.map((queue) => queue.messages), backgroundColor: "#c0392b" },
        { label: "in flight", data: queues.map((queue) => queue.in_flight), backgroundColor: "#d9a400" },
      ],
    },
    options: { animation: false, indexAxis: "y", scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } },
  });
}

function followReplay() {
  const panel = document.getElementById("replay-progress");
  if (!panel || panel.dataset.running !== "yes") return;
  const show = (progress) => {
    const rows = document.querySelector("#replay-executions tbody");
    rows.replaceChildren(
      ...progress.executions.map((execution) => {
        const row = document.createElement("tr");
        for (const text of [execution.execution_arn, execution.status]) {
          const cell = document.createElement("td");
          cell.textContent = text;
          row.appendChild(cell);
        }
        return row;
      }),
    );
    document.getElementById("replay-headline").textContent = progress.headline || "";
    document.getElementById("replay-error").textContent = progress.error || "";
    document.getElementById("replay-state").textContent = progress.running
      ? "Running…"
      : progress.error
        ? "Failed"
        : "Finished";
    panel.dataset.running = progress.running ? "yes" : "no";
  };
  const poll = () => {
    fetch(panel.dataset.source, { headers: { Accept: "application/json" } })
      .then((response) => response.json())
      .then((progress) => {
        show(progress);
        if (progress.running) setTimeout(poll, 1000);
      })
      .catch(() => setTimeout(poll, 2000));
  };
  setTimeout(poll, 500);
}

document.addEventListener("DOMContentLoaded", () => {
  if (window.Chart) {
    drawFlowCharts();
    drawDeadLetterChart();
  }
  followReplay();
});
