// biaslens explorer. Every model output and user text is put in the page with textContent
// (never innerHTML), so it is shown as text, not interpreted as markup.
"use strict";

function $(id) { return document.getElementById(id); }

function setStatus(id, text, isError) {
  const node = $(id);
  node.textContent = text;
  node.classList.toggle("error", Boolean(isError));
}

function fillTable(table, rows, columns) {
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const [, label] of columns) {
    const th = document.createElement("th");
    th.textContent = label;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const [key] of columns) {
      const value = row[key];
      const numeric = typeof value === "number" && key !== "value";
      tr.insertCell().textContent =
        numeric ? value.toFixed(key === "pct_female" ? 2 : 5) : String(value ?? "—");
    }
  }
}

// Reads a newline-delimited JSON stream: progress events, then a result or an error.
async function streamJSON(url, body, onProgress) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    const detail = await response.json().catch(() => ({}));
    throw new Error(detail.error || JSON.stringify(detail.detail || response.statusText));
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const event = JSON.parse(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
      if (event.progress !== undefined) onProgress(event.progress, event.total);
      if (event.error !== undefined) throw new Error(event.error);
      if (event.result !== undefined) return event.result;
    }
  }
  throw new Error("the server closed the stream without a result");
}

function showContinuation(node, prompt, continuation) {
  const strong = document.createElement("span");
  strong.className = "continuation";
  strong.textContent = continuation;
  node.replaceChildren(document.createTextNode(prompt), strong);
}

async function runCid(event) {
  event.preventDefault();
  const button = $("cid-run");
  button.disabled = true;
  const started = Date.now();
  const timer = setInterval(() => setStatus("cid-status", `generating… ${((Date.now() - started) / 1000).toFixed(0)} s`), 500);
  setStatus("cid-status", "generating…");
  try {
    const response = await fetch("/api/cid", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ x: $("cid-x").value, x_prime: $("cid-x-prime").value, lam: Number($("cid-lam").value) }),
    });
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || JSON.stringify(data.detail));
    showContinuation($("cid-out-x"), data.x, data.cid_x);
    showContinuation($("cid-out-x-prime"), data.x_prime, data.cid_x_prime);
    setStatus("cid-status", `done: λ = ${data.lam}`);
  } catch (error) {
    setStatus("cid-status", `error: ${error.message}`, true);
  } finally {
    clearInterval(timer);
    button.disabled = false;
  }
}

function sweepRunner(tool, url, body, show) {
  return async (event) => {
    event.preventDefault();
    const button = $(`${tool}-run`);
    const bar = $(`${tool}-progress`);
    button.disabled = true;
    bar.hidden = false;
    bar.value = 0;
    setStatus(`${tool}-status`, "starting…");
    try {
      const result = await streamJSON(url, body(), (done, total) => {
        bar.max = total;
        bar.value = done;
        setStatus(`${tool}-status`, `${done} / ${total} sentences scored`);
      });
      show(result);
      setStatus(`${tool}-status`, `done: ${result.rows.length} values`);
    } catch (error) {
      setStatus(`${tool}-status`, `error: ${error.message}`, true);
    } finally {
      bar.hidden = true;
      button.disabled = false;
    }
  };
}

const COLUMNS = [["value", "value"], ["p_female", "female"], ["p_male", "male"], ["p_neutral", "neutral"], ["pct_female", "female share (%)"]];

function showPlot(img, result) {
  img.src = result.plot;
  img.hidden = false;
}

function init() {
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => {
      for (const other of document.querySelectorAll(".tab")) other.classList.toggle("active", other === tab);
      for (const section of document.querySelectorAll(".tool")) section.hidden = section.id !== `tool-${tab.dataset.tool}`;
    });
  }
  $("cid-lam").addEventListener("input", () => { $("cid-lam-value").textContent = $("cid-lam").value; });
  $("cid-lam").addEventListener("change", () => $("cid-form").requestSubmit());
  $("cid-form").addEventListener("submit", runCid);
  $("detect-form").addEventListener("submit", sweepRunner(
    "detect", "/api/detect",
    () => ({ sentence: $("detect-sentence").value, threshold: Number($("detect-threshold").value) }),
    (result) => {
      $("detect-verdict").textContent = `${result.verdict} — ${result.explanation}`;
      showPlot($("detect-plot"), result);
      fillTable($("detect-table"), result.rows, COLUMNS);
    }));
  $("dose-form").addEventListener("submit", sweepRunner(
    "dose", "/api/dose",
    () => ({ sentence: $("dose-sentence").value, values: $("dose-values").value.split(",").map((v) => v.trim()).filter(Boolean) }),
    (result) => {
      showPlot($("dose-plot"), result);
      fillTable($("dose-table"), result.rows, COLUMNS);
    }));
  fetch("/api/info").then((r) => r.json()).then((info) => {
    $("model-info").textContent = `model: ${info.model} (${info.kind})`;
  }).catch(() => setStatus("model-info", "cannot reach the server", true));
}

document.addEventListener("DOMContentLoaded", init);
