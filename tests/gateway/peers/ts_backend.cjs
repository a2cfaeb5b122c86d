// A TypeScript SDK (v1) server for the gateway matrix, over stdio: a form question, a URL
// question and a -32042. Run with NODE_PATH at a node_modules that has @modelcontextprotocol/sdk.
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { UrlElicitationRequiredError } = require("@modelcontextprotocol/sdk/types.js");
const { z } = require("zod");
const fs = require("fs");
const path = require("path");

const server = new McpServer({ name: "ts-backend", version: "1.0.0" });
const text = (t) => ({ content: [{ type: "text", text: t }] });

server.registerTool("book", { description: "Ask who is booking (a form)." }, async () => {
  const result = await server.server.elicitInput({
    mode: "form",
    message: "Who is booking?",
    requestedSchema: {
      type: "object",
      properties: { name: { type: "string", title: "Your name" }, seats: { type: "integer", title: "Seats", default: 2 } },
      required: ["name"],
    },
  });
  if (result.action === "accept") return text(`booked ${result.content.seats} for ${result.content.name}`);
  return text(`no booking (${result.action})`);
});

server.registerTool("connect", { description: "Send the person to a sign-in page." }, async () => {
  const result = await server.server.elicitInput({
    mode: "url",
    message: "Sign in to the example service.",
    url: "https://auth.example.com/sign-in",
    elicitationId: "sign-in-1",
  });
  return text(`connect: ${result.action}`);
});

server.registerTool("gated", { description: "Always -32042." }, async () => {
  throw new UrlElicitationRequiredError(
    [{ mode: "url", message: "Authorize the reports service.", url: "https://reports.example.com/authorize", elicitationId: "reports-auth" }],
    "Authorization required."
  );
});

server.registerTool(
  "wait",
  { description: "Wait until cancelled; leave cancelled-MARK in $GATEWAY_TEST_STATE.", inputSchema: { mark: z.string() } },
  async ({ mark }, extra) =>
    new Promise((resolve) => {
      extra.signal.addEventListener("abort", () => {
        fs.writeFileSync(path.join(process.env.GATEWAY_TEST_STATE || ".", `cancelled-${mark}`), "cancelled");
        resolve(text("cancelled"));
      });
    })
);

server.connect(new StdioServerTransport());
