// conformance-proxy.mjs — a loopback reverse proxy for scripts/conformance.sh.
//
// The MCP conformance suite (0.1.16) connects to a bare URL and cannot send
// headers, while sbf serve answers nothing without its bearer token (that
// default stays: no flag loosens it). This proxy adds the token and passes
// everything else through untouched — Host and Origin included, so the
// suite's DNS-rebinding scenario still tests sbf's own checks — and streams
// responses (SSE) as they come.
//
// usage: node conformance-proxy.mjs LISTEN_PORT TARGET_PORT TOKEN_FILE
// It prints "listening PORT" once it accepts connections (LISTEN_PORT 0: any).
import { readFileSync } from "node:fs";
import http from "node:http";

const [listenPort, targetPort, tokenFile] = process.argv.slice(2);
const token = readFileSync(tokenFile, "utf8").trim();

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const upstream = http.request(
    { host: "127.0.0.1", port: Number(targetPort), method: req.method, path: req.url, headers },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    },
  );
  upstream.on("error", (err) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end(`proxy: ${err.message}`);
  });
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
});

server.listen(Number(listenPort), "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
