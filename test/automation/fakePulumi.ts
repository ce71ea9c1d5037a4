// A fake `pulumi` executable for tests of what the Automation API really spawns: it records every
// command line, the environment variables that matter and the stack file as the engine would see it,
// and mimics what the real CLI writes to the stack file (pkg/cmd/pulumi/stack/secrets.go,
// pkg/secrets/cloud/manager.go): a KMS secrets provider's `encryptedkey` when the stack is created
// (`stack init --secrets-provider`) and when a run finds the stack file without one.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { RUN_SECRETS_FILE_ENV } from "../../components/config/runSecretsEnv";

/** One invocation of the fake CLI. */
export interface FakeInvocation {
  readonly args: string[];
  readonly cwd: string;
  /** The environment variables the engine and the program would read. */
  readonly env: Record<string, string | undefined>;
  /** The stack file's content when the command started (undefined when there was none). */
  readonly stackFile?: string;
  /** The run's credentials file the command was given, as it was then: content and mode. */
  readonly runSecretsFile?: { readonly content: string; readonly mode: number };
}

/** Variables recorded from each invocation's environment. */
export const RECORDED_ENV = [
  RUN_SECRETS_FILE_ENV,
  "BWS_ACCESS_TOKEN",
  "PROXMOX_VE_API_TOKEN",
  "GOOGLE_CREDENTIALS",
  "PULUMI_BACKEND_URL",
  "PULUMI_CONFIG_PASSPHRASE_FILE",
];

/** The data key the fake engine "mints". */
export const FAKE_ENCRYPTED_KEY = "CiQAfakeDataKeyWrappedByKms==";

const SCRIPT = String.raw`
const fs = require("node:fs");
const path = require("node:path");
const [logFile, stacksDir, recorded, yamlModule, eventsModule] = __SETUP__;
const YAML = require(yamlModule);
const args = process.argv.slice(2);
const flag = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const stack = flag("--stack") ?? (args[0] === "stack" && args[1] === "init" ? args[2] : undefined);
const stackFile = stack ? path.join(process.cwd(), "Pulumi." + stack + ".yaml") : undefined;
const env = {};
for (const name of recorded) env[name] = process.env[name];
const secretsFile = process.env.${RUN_SECRETS_FILE_ENV};
const runSecretsText = secretsFile && fs.existsSync(secretsFile) ? fs.readFileSync(secretsFile, "utf8") : "{}";
fs.appendFileSync(logFile, JSON.stringify({
  args, cwd: process.cwd(), env,
  stackFile: stackFile && fs.existsSync(stackFile) ? fs.readFileSync(stackFile, "utf8") : undefined,
  runSecretsFile: secretsFile && fs.existsSync(secretsFile)
    ? { content: runSecretsText, mode: fs.statSync(secretsFile).mode & 0o777 } : undefined,
}) + "\n");
// The program of an up or preview reads the credentials file and deletes it, as ours does.
if (secretsFile && ["up", "preview"].includes(args[0])) fs.rmSync(secretsFile, { force: true });
/**
 * What the engine does for a stack file naming a KMS provider without a data key: mint one and save
 * the stack file, serialised again from its parsed form (comments and layout lost).
 */
function saveDataKey(provider) {
  const stack = (fs.existsSync(stackFile) ? YAML.parse(fs.readFileSync(stackFile, "utf8")) : null) ?? {};
  const kms = provider ?? stack.secretsprovider;
  if (!kms || !/kms:\/\//.test(kms) || stack.encryptedkey) return;
  const saved = { secretsprovider: kms, encryptedkey: "${FAKE_ENCRYPTED_KEY}", ...stack };
  saved.secretsprovider = kms;
  saved.encryptedkey = "${FAKE_ENCRYPTED_KEY}";
  fs.writeFileSync(stackFile, YAML.stringify(saved));
}
function events(isPreview) {
  const log = flag("--event-log");
  if (!log) return;
  const lines = [
    { sequence: 0, timestamp: 1, preludeEvent: { config: {} } },
    { sequence: 1, timestamp: 1, summaryEvent: { maybeCorrupt: false, durationSeconds: 1, resourceChanges: {}, PolicyPacks: {}, isPreview, result: "succeeded" } },
    { sequence: 2, timestamp: 1, cancelEvent: {} },
  ];
  fs.writeFileSync(log, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
}
const exists = stack && fs.existsSync(path.join(stacksDir, stack));
if (args[0] === "version") {
  process.stdout.write((process.env.FAKE_PULUMI_VERSION || "v3.200.0") + "\n");
  process.exit(0);
}
if (args[0] === "stack" && args[1] === "select") {
  if (!exists) { process.stderr.write("error: no stack named '" + stack + "' found\n"); process.exit(255); }
  process.exit(0);
}
if (args[0] === "stack" && args[1] === "init") {
  fs.writeFileSync(path.join(stacksDir, stack), "");
  saveDataKey(flag("--secrets-provider"));
  process.exit(0);
}
if (args[0] === "stack" && args[1] === "history") { process.stdout.write("[]\n"); process.exit(0); }
if (args[0] === "stack" && args[1] === "output") {
  process.stdout.write((process.env.FAKE_PULUMI_OUTPUTS || "{}") + "\n");
  process.exit(0);
}
if (args[0] === "stack" && args[1] === "export") {
  process.stdout.write(JSON.stringify({ version: 3, deployment: { manifest: {}, resources: [] } }) + "\n");
  process.exit(0);
}
if (["up", "preview", "refresh", "destroy"].includes(args[0]) && process.env.FAKE_PULUMI_HANG) {
  // An engine that never ends, with what the real one leaves when killed: a secret in a temp file
  // (TMPDIR) and a plugin in a process group of its own (setpgid) with a child of its own, all
  // deaf to SIGINT and SIGTERM. The pids and the file go to FAKE_PULUMI_HANG once all are up.
  const { spawn } = require("node:child_process");
  const os = require("node:os");
  const secret = path.join(os.tmpdir(), "engine-secret.json");
  fs.writeFileSync(secret, runSecretsText, { mode: 0o600 });
  const deaf = "process.on('SIGINT',()=>{});process.on('SIGTERM',()=>{});setInterval(()=>{},1000);";
  const plugin = spawn(process.execPath, ["-e",
    deaf + "const c=require('node:child_process').spawn(process.execPath,['-e'," + JSON.stringify(deaf) +
    "],{stdio:'ignore'});console.log(c.pid);"], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
  plugin.stdout.once("data", (grandchild) => {
    fs.writeFileSync(process.env.FAKE_PULUMI_HANG, JSON.stringify({
      engine: process.pid, plugin: plugin.pid, grandchild: Number(String(grandchild).trim()), secret,
      eventLog: flag("--event-log"),
    }));
  });
  process.on("SIGINT", () => {});
  process.on("SIGTERM", () => {});
  setInterval(() => {}, 1000);
  return;
}
if (["up", "preview", "refresh", "destroy"].includes(args[0]) && process.env.FAKE_PULUMI_LEAK_SECRETS) {
  // A provider quoting the credentials it was given, as many do in their errors: in a diagnostic
  // (plain and JSON-escaped) and on stderr, then failing. Pulumi masks none of it (not secret config).
  const secrets = Object.values(JSON.parse(runSecretsText));
  const leak = secrets.map((value) => "value " + value + " (json " + JSON.stringify(value) + ")").join("; ");
  const events = [
    { sequence: 0, timestamp: 1, preludeEvent: { config: {} } },
    { sequence: 1, timestamp: 1, diagnosticEvent: { message: "error: 401 Unauthorized: " + leak + "\n", color: "never", severity: "error", prefix: "error: " } },
    { sequence: 2, timestamp: 1, summaryEvent: { maybeCorrupt: false, durationSeconds: 1, resourceChanges: {}, PolicyPacks: {}, isPreview: args[0] === "preview", result: "failed" } },
    { sequence: 3, timestamp: 1, cancelEvent: {} },
  ];
  const fail = () => {
    process.stderr.write("error: the provider refused the credentials: " + leak + "\n");
    process.exit(255);
  };
  const log = flag("--event-log") ?? "";
  if (!log.startsWith("tcp://")) {
    if (log) fs.writeFileSync(log, events.map((e) => JSON.stringify(e)).join("\n") + "\n");
    fail();
  }
  // Pulumi 3.206+ streams the events to the Automation API's gRPC server instead of a file.
  const grpc = require(require.resolve("@grpc/grpc-js", { paths: [path.dirname(eventsModule)] }));
  const { EventsClient } = require(eventsModule);
  const { EventRequest } = require(path.join(path.dirname(eventsModule), "events_pb.js"));
  const client = new EventsClient(log.slice("tcp://".length), grpc.credentials.createInsecure());
  const call = client.streamEvents(() => fail());
  for (const event of events) {
    const request = new EventRequest();
    request.setEvent(JSON.stringify(event));
    call.write(request);
  }
  call.end();
  return;
}
if (["up", "preview", "refresh", "destroy"].includes(args[0])) {
  saveDataKey(undefined);
  events(args[0] === "preview");
  process.exit(0);
}
process.exit(0);
`;

/** A fake Pulumi CLI installed in a temporary folder; read what it recorded with {@link calls}. */
export class FakePulumi {
  readonly dir: string;
  readonly command: string;
  private readonly logFile: string;

  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "fake-pulumi-"));
    const stacksDir = path.join(this.dir, "stacks");
    fs.mkdirSync(stacksDir);
    this.logFile = path.join(this.dir, "calls.ndjson");
    fs.writeFileSync(this.logFile, "");
    const script = path.join(this.dir, "fake-pulumi.js");
    fs.writeFileSync(
      script,
      SCRIPT.replace(
        "__SETUP__",
        JSON.stringify([
          this.logFile,
          stacksDir,
          RECORDED_ENV,
          require.resolve("yaml"),
          require.resolve("@pulumi/pulumi/proto/events_grpc_pb.js"),
        ]),
      ),
    );
    // PulumiCommand.get({ root }) runs <root>/bin/pulumi.
    fs.mkdirSync(path.join(this.dir, "bin"));
    this.command = path.join(this.dir, "bin", "pulumi");
    fs.writeFileSync(
      this.command,
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(script)} "$@"\n`,
      { mode: 0o755 },
    );
  }

  /** Marks a stack as existing on the (fake) backend. */
  addStack(name: string): void {
    fs.writeFileSync(path.join(this.dir, "stacks", name), "");
  }

  /** Every invocation so far, in order. */
  calls(): FakeInvocation[] {
    return fs
      .readFileSync(this.logFile, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as FakeInvocation);
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
