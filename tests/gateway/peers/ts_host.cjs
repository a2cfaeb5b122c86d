// A TypeScript SDK (v1) client as the host: `node ts_host.cjs URL [!]TOOL[:JSONARGS]...` calls each tool on the
// gateway at URL, answering its questions (forms: name Ada, seats 3 where asked; URLs: accept),
// and prints one JSON line: {tool: {text, isError} | {code, message, data}} and what it was asked.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

async function main() {
  const [url, ...tools] = process.argv.slice(2);
  const asked = [];
  const client = new Client(
    { name: "ts-host", version: "1.0.0" },
    { capabilities: { elicitation: { form: {}, url: {} } } }
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const params = request.params;
    asked.push({ mode: params.mode || "form", message: params.message, url: params.url });
    if (params.mode === "url") return { action: "accept" };
    const fields = Object.keys(params.requestedSchema.properties || {});
    const content = { name: "Ada" };
    if (fields.includes("seats")) content.seats = 3;
    return { action: "accept", content };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const out = { protocolVersion: client.transport.protocolVersion, results: {}, asked };
  for (let spec of tools) {
    // "!TOOL:ARGS": give up after half a second (the SDK then sends notifications/cancelled)
    const abandon = spec.startsWith("!");
    if (abandon) spec = spec.slice(1);
    const at = spec.indexOf(":");
    const tool = at < 0 ? spec : spec.slice(0, at);
    const args = at < 0 ? {} : JSON.parse(spec.slice(at + 1));
    try {
      const options = abandon ? { signal: AbortSignal.timeout(500) } : undefined;
      const result = await client.callTool({ name: tool, arguments: args }, undefined, options);
      out.results[tool] = { text: result.content.map((c) => c.text).join("\n"), isError: !!result.isError };
    } catch (error) {
      out.results[tool] = { code: error.code, message: error.message, data: error.data };
    }
  }
  // The SDK sends notifications/cancelled without waiting for it: a host that stays connected a
  // moment lets it go out (closing at once aborts the POST carrying it).
  if (tools.some((spec) => spec.startsWith("!"))) await new Promise((resolve) => setTimeout(resolve, 300));
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack || error) + "\n");
  process.exit(1);
});
