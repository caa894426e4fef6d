#!/usr/bin/env node
// TypeScript types for a Python service from the JSON Schema `aqueduct schema` prints:
//
//   aqueduct schema myapp.services:Calculator | npm run -s service-types -- Calculator > calculator.ts
//
// (or a schema file as the second argument; `--from SPEC` sets the module the types import from, default
// "@aqueduct-quic/client"). The output has one interface per method's call message (`AddCall`: its parameters, its
// `reply` oneshot and `meta`), one per reply (`AddReply`), the union `CalculatorCall` and `CalculatorStub`, the type
// of `service<CalculatorCall>(conn.entrypoint)`. Channel halves in the schema (`x-aqueduct-channel`, `x-message`)
// become `Sender<T>`, `Receiver<T>`, `OneshotSender<T>`, `OneshotReceiver<T>`; the generation itself is
// json-schema-to-typescript's, after this script renames the schema's definitions (T0, T1... by shape) after the
// methods they belong to.
import { readFileSync } from "node:fs";
import { compile } from "json-schema-to-typescript";

const args = process.argv.slice(2);
let from = "@aqueduct-quic/client";
const rest = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--from") from = args[++i];
  else rest.push(args[i]);
}
const [name, file] = rest;
if (!name || !/^[A-Za-z_$][\w$]*$/.test(name)) {
  console.error("usage: service-types NAME [SCHEMA_FILE] [--from MODULE] (the schema on stdin when no file)");
  process.exit(2);
}
const text = readFileSync(file ?? 0, "utf8");
// `aqueduct schema` prints the schema, then a line "fingerprint: ..."
const doc = JSON.parse(text.replace(/\nfingerprint:.*\s*$/, ""));
const defs = doc.$defs ?? {};
const pascal = (s) => s.replace(/(^|_)([a-z0-9])/g, (_, __, c) => c.toUpperCase());
const keyOf = (ref) => ref.split("/").pop();

// Definitions the package already types: a Failure and a CallMeta (msgspec repeats them per method).
const shared = new Map();
for (const [key, def] of Object.entries(defs)) {
  const props = Object.keys(def.properties ?? {});
  if (props.sort().join(",") === "message,method,type") shared.set(key, "Failure");
  if (props.includes("metadata") && props.includes("timeout") && !props.includes("method")) shared.set(key, "CallMeta");
}
// Names: each method's call struct and its reply struct.
const names = new Map();
for (const alt of doc.anyOf ?? [doc]) {
  const key = alt.$ref && keyOf(alt.$ref);
  const def = key ? defs[key] : alt;
  const method = def?.properties?.method?.enum?.[0];
  if (!method) continue;
  if (key) names.set(key, `${pascal(method)}Call`);
  const reply = def.properties.reply?.["x-message"]?.[0]?.$ref;
  if (reply) names.set(keyOf(reply), `${pascal(method)}Reply`);
}
// Other call structs (of interfaces passed as capabilities) by their method too, where the name is free.
const taken = new Set(names.values());
for (const [key, def] of Object.entries(defs)) {
  const method = def.properties?.method?.enum?.[0];
  if (!method || names.has(key) || taken.has(`${pascal(method)}Call`)) continue;
  names.set(key, `${pascal(method)}Call`);
  taken.add(`${pascal(method)}Call`);
  const reply = def.properties.reply?.["x-message"]?.[0]?.$ref;
  if (reply && !taken.has(`${pascal(method)}Reply`)) names.set(keyOf(reply), `${pascal(method)}Reply`);
}
let hoisted = 0;
const tsOf = (schema) => {
  if (schema.$ref) {
    const key = keyOf(schema.$ref);
    return shared.get(key) ?? names.get(key) ?? key;
  }
  if (schema["x-aqueduct-channel"]) return halfType(schema);
  switch (schema.type) {
    case "integer": case "number": return "number";
    case "string": return "string";
    case "boolean": return "boolean";
    case "null": return "null";
    case "array": if (schema.items) return `Array<${tsOf(schema.items)}>`;
  }
  if (schema.anyOf) return schema.anyOf.map(tsOf).join(" | ");
  const key = `Message${hoisted++}`; // anything else: a definition of its own
  defs[key] = schema;
  names.set(key, key);
  return key;
};
const halfType = (schema) => `${schema["x-aqueduct-channel"]}<${tsOf(schema["x-message"]?.[0] ?? {})}>`;
const rewrite = (node) => {
  if (Array.isArray(node)) return node.map(rewrite);
  if (!node || typeof node !== "object") return node;
  if (node["x-aqueduct-channel"]) return { tsType: halfType(node) };
  if (node.$ref && shared.has(keyOf(node.$ref))) return { tsType: shared.get(keyOf(node.$ref)) };
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, rewrite(v)]));
};
for (const key of shared.keys()) delete defs[key];
for (const key of Object.keys(defs)) {
  defs[key] = rewrite(defs[key]);
  defs[key].title = names.get(key) ?? key;
}
// json-schema-to-typescript emits every definition (`unreachableDefinitions`) only of an object schema: the union
// becomes a definition of its own under an empty object root, whose interface is dropped from the output.
const union = rewrite({ ...doc, $defs: undefined, discriminator: undefined, $schema: undefined });
defs[`${name}Call`] = { ...union, title: `${name}Call` };
const root = { title: "DropThisRoot", type: "object", properties: {}, additionalProperties: false, $defs: defs };

const banner = `// Generated by clients/typescript/scripts/service-types.mjs from \`aqueduct schema\`: do not edit.
import type { CallMeta, Failure, OneshotReceiver, OneshotSender, Receiver, Sender, Stub } from "${from}";
`;
let out = await compile(root, "DropThisRoot", {
  bannerComment: banner, unreachableDefinitions: true, additionalProperties: false, strictIndexSignatures: true,
  format: true, style: { singleQuote: false },
});
out = out.replace(/export interface DropThisRoot \{\}\n/, "").replace(/\n\/\*\*\n \* This interface was referenced by `DropThisRoot`'s JSON-Schema\n \* via the `definition` "\w+".\n \*\/\n/g, "\n");
out += `\n/** The stub of this service: \`service<${name}Call>(conn.entrypoint)\`. */\nexport type ${name}Stub = Stub<${name}Call>;\n`;
process.stdout.write(out);
