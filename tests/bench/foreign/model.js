// A model server on Node's own HTTP stack (llhttp; idle keep-alive connections closed after
// 5 s), for tests/bench/foreign.sh: nothing in it is shared with the project's simulator.
//   node model.js --slots=K --service_ms=S [--sigma=G] [--warmup_s=W --slowdown=X]
//                 [--stall_ms=D --stall_rate=R] [--keepalive_ms=T] [--port=P]
// K requests in service at once (the rest wait in FIFO order), each for S ms times a
// lognormal factor of mean 1 (log-space sigma G); for the first W s after start every
// service takes X times longer (a cold start that ends at once, as when a compiled engine is
// ready); event-loop stalls (a busy wait, like a GC pause) of D ms at Poisson rate R per
// second. Any POST is an inference (KServe v2 response); GET /metrics is a Prometheus gauge.
// Prints "listening PORT" once bound.
const http = require('http');
const args = Object.fromEntries(process.argv.slice(2).map(a => a.replace(/^--/, '').split('=')));
const K = +(args.slots || 4), S = +(args.service_ms || 20), SIG = +(args.sigma || 0);
const W = +(args.warmup_s || 0), X = +(args.slowdown || 1);
const D = +(args.stall_ms || 0), R = +(args.stall_rate || 0);
const start = Date.now();
let busy = 0; const queue = [];
let served = 0;
function gauss() { let u = 0, v = 0; while (!u) u = Math.random(); while (!v) v = Math.random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v); }
function serviceMs() {
  let s = S * (SIG > 0 ? Math.exp(SIG * gauss() - SIG * SIG / 2) : 1);
  if ((Date.now() - start) / 1000 < W) s *= X;
  return s;
}
function run(job) {
  busy++;
  setTimeout(() => {
    busy--; served++;
    job();
    if (queue.length) run(queue.shift());
  }, serviceMs());
}
if (D > 0 && R > 0) {
  const next = () => setTimeout(() => { const t = Date.now(); while (Date.now() - t < D) {} next(); },
                                -Math.log(Math.random()) / R * 1000);
  next();
}
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', c => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'GET') {
      if (req.url.startsWith('/metrics')) {
        res.writeHead(200, {'Content-Type': 'text/plain'});
        res.end(`# TYPE model_queue gauge\nmodel_queue ${queue.length}\nmodel_served_total ${served}\n`);
      } else { res.writeHead(200); res.end('{}'); }
      return;
    }
    const job = () => {
      const body = JSON.stringify({model_name: 'node', outputs: [{name: 'out', shape: [1], datatype: 'FP32', data: [1.0]}]});
      res.writeHead(200, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body)});
      res.end(body);
    };
    if (busy < K) run(job); else queue.push(job);
  });
});
if (args.keepalive_ms) server.keepAliveTimeout = +args.keepalive_ms;
server.listen(+(args.port || 0), '127.0.0.1', () => console.log('listening ' + server.address().port));
