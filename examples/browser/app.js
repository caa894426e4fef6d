// The page: a chart fed by a channel we hand the server, and a form that calls its typed service.
import { connect, channel, request } from "/aqueduct.js";

const config = await (await fetch("/config.json")).json();
const hash = new Uint8Array(config.certificateHash.match(/../g).map((x) => parseInt(x, 16)));
const status = document.getElementById("status");
const conn = await connect(config.url, { serverCertificateHashes: [{ algorithm: "sha-256", value: hash }] });
status.textContent = "connected over WebTransport";

// A call of the Dashboard service: a message {method, reply, ...arguments} on the entrypoint; the reply is
// {value} or {error: {type, message, method}}.
const call = async (method, args) => {
  const answer = await request(conn.entrypoint, (reply) => ({ method, reply, ...args }));
  if (answer.error) throw Object.assign(new Error(answer.error.message), { type: answer.error.type });
  return answer.value;
};

// The chart: we keep the receiver and hand the server the sender.
const [feed, points] = channel();
await call("watch", { feed });
const canvas = document.getElementById("chart");
const ctx = canvas.getContext("2d");
const shown = [];
window.points = 0;
(async () => {
  for await (const p of points) {
    shown.push(p);
    if (shown.length > 200) shown.shift();
    window.points += 1;
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.beginPath();
    shown.forEach((q, i) => {
      const x = (i / 200) * canvas.width;
      const y = canvas.height / 2 - q.value * canvas.height / 3;
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
  }
})();

// The form: a typed call, its result or its declared error.
const answer = document.getElementById("answer");
document.getElementById("order").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  try {
    const quote = await call("quote", { item: form.get("item"), quantity: Number(form.get("quantity")) });
    answer.textContent = `${quote.quantity} ${quote.item}: ${quote.total.toFixed(2)}`;
  } catch (err) {
    answer.textContent = `${err.type ?? "error"}: ${err.message}`;
  }
});
