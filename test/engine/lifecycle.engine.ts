// The engine tier (npm run test:engine): the project's CLI against the real Pulumi engine, its
// Node.js language host and the Talos provider plugin, on a file:// backend in a temporary folder
// with a passphrase. Steps, in order (each builds on the one before):
//   1. the Pulumi CLI loads every layer's Pulumi.yaml and every stack file;
//   2. preview of the bare-metal test stack (events recorded for the summary and progress tests);
//   3. up: the Talos secrets are created and every node's machine config generated from every
//      patch the program emits by Talos' machinery; the state holds no secret in plain text;
//   4. failure paths: nodes that do not answer, the stack file back byte for byte after a run with
//      secret config, locks released; refresh; destroy (refused for the protected secrets, then
//      done once they are unprotected).
// Nodes that answer the Talos API arrive with the node emulator (the next issue); until then the
// run stops at the first apply, where nodes are needed.
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { ExitCode } from "../../automation/errors";
import { stackObjectPrefixes } from "../../components/gcp/ciIdentities";
import { type CliRun, EngineSandbox, ROOT, engineTools } from "./harness";
import { writeRecording } from "./recordings";

const STACK = "engine";
const PROJECT = "talos-platform";
/** A deploy key that must never show up in plain text anywhere. */
const DEPLOY_KEY =
  "-----BEGIN OPENSSH PRIVATE KEY-----\nENGINE-TIER-NOT-A-REAL-KEY-0c7f1e\n-----END OPENSSH PRIVATE KEY-----\n";

/** The layers and the folders of their Pulumi.yaml. */
const LAYERS = [
  { dir: ".", project: "talos-platform" },
  { dir: "bootstrap", project: "talos-platform-bootstrap" },
  { dir: "app", project: "talos-platform-app" },
];

function stackFiles(dir: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir))
    .filter((f) => /^Pulumi\.[^.]+\.yaml$/.test(f))
    .map((f) => f.slice("Pulumi.".length, -".yaml".length))
    .sort();
}

function failures(run: CliRun): string[] {
  return run.events.flatMap((e) =>
    e.resOpFailedEvent ? [e.resOpFailedEvent.metadata.urn.split("::").at(-1)!] : [],
  );
}

function explain(run: CliRun): string {
  return `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

describe("the engine tier: the real Pulumi engine and Talos provider", function () {
  this.timeout(15 * 60_000);
  const tools = engineTools();
  let sandbox: EngineSandbox;
  let stackFile: string;
  const secretEnv = { FLUX_DEPLOY_KEY: DEPLOY_KEY };

  before(() => {
    sandbox = new EngineSandbox(tools);
    stackFile = sandbox.writeStack(
      ".",
      STACK,
      fs.readFileSync(path.join(__dirname, "stacks", "Pulumi.engine.yaml"), "utf8"),
    );
    process.stdout.write(
      `      (pulumi ${tools.pulumiVersion} ${tools.pulumiSource}, talos plugin ${tools.talosVersion} ${tools.pluginSource}; sandbox ${sandbox.dir})\n`,
    );
  });
  after(() => {
    if (process.env.ENGINE_KEEP_SANDBOX === undefined) sandbox.remove();
  });

  describe("1. every layer's Pulumi.yaml and stack files", () => {
    for (const layer of LAYERS) {
      for (const env of stackFiles(layer.dir)) {
        it(`the Pulumi CLI loads ${path.join(layer.dir, `Pulumi.${env}.yaml`)} with its project's config declarations`, () => {
          const stackName = `load-${env}`;
          // A copy under a new stack name: the repository's stack file itself is left as it is.
          const original = fs.readFileSync(
            path.join(sandbox.repo, layer.dir, `Pulumi.${env}.yaml`),
          );
          fs.writeFileSync(
            path.join(sandbox.repo, layer.dir, `Pulumi.${stackName}.yaml`),
            original,
          );
          const init = sandbox.pulumi(
            ["stack", "init", stackName, "--secrets-provider", "passphrase"],
            layer.dir,
          );
          assert.equal(init.code, 0, init.stderr);
          const config = sandbox.pulumi(["config", "--json", "--stack", stackName], layer.dir);
          assert.equal(config.code, 0, config.stderr);
          const loaded = JSON.parse(config.stdout) as Record<string, { value?: string }>;
          const declared =
            (parse(original.toString("utf8")) as { config?: Record<string, unknown> }).config ?? {};
          for (const key of Object.keys(declared)) {
            const full = key.includes(":") ? key : `${layer.project}:${key}`;
            assert.ok(full in loaded, `${full} loaded; got ${Object.keys(loaded).join(", ")}`);
          }
          const removed = sandbox.pulumi(["stack", "rm", stackName, "--yes", "--force"], layer.dir);
          assert.equal(removed.code, 0, removed.stderr);
        });
      }
    }
  });

  describe("1b. what the Pulumi CLI makes of Pulumi.yaml's config declarations", () => {
    it("requires every declared key in every stack file, and leaves untyped values unchecked", () => {
      // Pulumi checks declared keys before the program runs: one without default or value must be
      // in the stack file; only keys with a `type` (string, integer, boolean, array) are
      // type-checked, so the object-valued cluster and nodes stay untyped and described.
      sandbox.writeStack(".", "missing", "config:\n  talos-platform:cluster:\n    name: x\n");
      const init = sandbox.pulumi(["stack", "init", "missing", "--secrets-provider", "passphrase"]);
      assert.equal(init.code, 0, init.stderr);
      const preview = sandbox.pulumi(["preview", "--stack", "missing"]);
      assert.notEqual(preview.code, 0);
      assert.match(
        preview.stdout + preview.stderr,
        /Stack 'missing' is missing configuration value 'nodes'/,
      );
      assert.equal(sandbox.pulumi(["stack", "rm", "missing", "--yes", "--force"]).code, 0);
    });
  });

  describe("2. preview", () => {
    it("previews the bare-metal stack through `npm run platform`, writing the PR summary", () => {
      const before = fs.readFileSync(stackFile);
      const run = sandbox.npmPlatform(["preview", STACK, "--summary", "preview.md"], secretEnv);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.match(run.stdout, /preview foundation\/engine: done in \S+; \d+ to create/);
      const summary = fs.readFileSync(path.join(sandbox.repo, "preview.md"), "utf8");
      assert.match(summary, /^\| foundation \| engine \| \d+ \| 0 \| 0 \| 0 \| changes \|$/m);
      assert.match(summary, /`engine-secrets` \| `talos:machine\/secrets:Secrets`/);
      // Creating the stack (the first run) makes Pulumi write the passphrase's salt into the stack
      // file, re-serialising it; the values stay as they were and no secret is left in it.
      const after = fs.readFileSync(stackFile, "utf8");
      assert.deepEqual(
        { ...(parse(after) as object), encryptionsalt: undefined },
        { ...(parse(before.toString("utf8")) as object), encryptionsalt: undefined },
      );
      assert.match(after, /^encryptionsalt: v1:/m);
      assert.doesNotMatch(after, /fluxDeployKey|secure:/);
      assert.ok(!run.stdout.includes("ENGINE-TIER-NOT-A-REAL-KEY"), "no secret in the output");
    });

    it("records the events of a preview as the engine emits them", async () => {
      const before = fs.readFileSync(stackFile);
      const { result: run, written } = await sandbox.backendWrites(() =>
        sandbox.cli(["preview", STACK], secretEnv),
      );
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.ok(fs.readFileSync(stackFile).equals(before), "stack file restored byte for byte");
      // CI's preview identity may write nothing: the engine takes no lock for a preview and the
      // CLI keeps a preview's lease in the checkout.
      assert.deepEqual(written, []);
      const created = run.events
        .filter((e) => e.resourcePreEvent?.metadata.op === "create")
        .map((e) => e.resourcePreEvent!.metadata.type);
      assert.ok(created.includes("talos:machine/secrets:Secrets"), created.join(", "));
      assert.equal(
        created.filter((t) => t === "talos:machine/configurationApply:ConfigurationApply").length,
        2,
        "one config apply per node",
      );
      writeRecording("preview-foundation-engine", run.events, sandbox);
    });
  });

  describe("3. up: Talos secrets and every node's machine config from the real provider", () => {
    let up: CliRun;
    let written: string[];
    let environments: { holders: string[]; plugins: string[]; pluginsFoundFile: string[] };
    before(async () => {
      const before = fs.readFileSync(stackFile);
      let watched;
      ({ result: watched, written } = await sandbox.backendWrites(() =>
        EngineSandbox.processEnvironments("ENGINE-TIER-NOT-A-REAL-KEY-0c7f1e", () =>
          sandbox.cli(["up", STACK], secretEnv),
        ),
      ));
      ({ result: up, ...environments } = watched);
      assert.ok(fs.readFileSync(stackFile).equals(before), "stack file restored byte for byte");
      writeRecording("up-foundation-engine-failed", up.events, sandbox);
    });

    it("writes only objects CI's apply identity may write for this stack (its IAM prefixes)", () => {
      const prefixes = stackObjectPrefixes("talos-platform", STACK);

      assert.ok(
        written.some((name) =>
          name.startsWith(`.pulumi/locks/organization/talos-platform/${STACK}/`),
        ),
        `the engine's lock is among the writes; got ${written.join(", ")}`,
      );
      assert.ok(
        written.includes(`.pulumi/stacks/talos-platform/${STACK}.json`),
        written.join(", "),
      );
      const outside = written.filter((name) => !prefixes.some((prefix) => name.startsWith(prefix)));
      assert.deepEqual(outside, [], `written outside ${prefixes.join(", ")}`);
    });

    it("keeps the Flux key out of every process's environment; the provider plugin finds its file gone", () => {
      // FLUX_DEPLOY_KEY came from the environment; the program got it in the credentials file.
      assert.deepEqual(environments.holders, [], "processes with the key in their environment");
      assert.ok(
        environments.plugins.includes("pulumi-resource-talos"),
        environments.plugins.join(),
      );
      assert.deepEqual(
        environments.pluginsFoundFile,
        [],
        "plugins that found the credentials file",
      );
    });

    it("creates the protected machine secrets", () => {
      const created = up.events.filter(
        (e) =>
          e.resOutputsEvent?.metadata.op === "create" &&
          e.resOutputsEvent.metadata.type === "talos:machine/secrets:Secrets",
      );
      assert.equal(created.length, 1, explain(up));
    });

    it("generates every node's config from every patch: only the apply to the absent nodes fails", () => {
      assert.deepEqual(
        failures(up).sort(),
        ["engine-cp-1-config", "engine-worker-1-config"],
        explain(up),
      );
      // An invoke that failed (a patch Talos' machinery rejected) is an error without a resource.
      const programErrors = up.events.filter(
        (e) =>
          e.diagnosticEvent?.severity === "error" &&
          /getConfiguration|error parsing config patch|failed to generate/i.test(
            e.diagnosticEvent.message,
          ),
      );
      assert.deepEqual(programErrors, []);
    });

    it("shows none of the engine's debug diagnostics, which carry invoke results in plain text", () => {
      const debug = up.events.filter((e) => (e.diagnosticEvent?.severity as string) === "debug");
      assert.ok(
        debug.some((e) => /PRIVATE KEY|machine:\s*\n?\s*type:/.test(e.diagnosticEvent!.message)),
        "the engine streams the SDK's debug log with the generated machine configs",
      );
      assert.doesNotMatch(up.stdout + up.stderr, /PRIVATE KEY|RegisterResource RPC|Invoke RPC/);
    });

    it("names the failing resources and exits with the documented code", () => {
      assert.equal(up.code, ExitCode.failed, explain(up));
      assert.match(up.stderr, /^up foundation\/engine: 2 resources failed; got:$/m);
      assert.match(
        up.stderr,
        /- create talos:machine\/configurationApply:ConfigurationApply "engine-cp-1-config": .*127\.14\.20\.11/,
      );
      assert.match(up.stdout, /up foundation\/engine: failed after \S+; 2 failed resources/);
    });

    it("keeps no secret in plain text in the state file", () => {
      const raw = fs.readFileSync(sandbox.stateFile(PROJECT, STACK), "utf8");
      const exported = sandbox.pulumi(["stack", "export", "--show-secrets", "--stack", STACK]);
      assert.equal(exported.code, 0, exported.stderr);
      const plaintexts = secretPlaintexts(JSON.parse(exported.stdout));
      assert.ok(plaintexts.length >= 8, `secrets found in the export: ${plaintexts.length}`);
      for (const secret of plaintexts) {
        assert.ok(
          !raw.includes(secret.slice(0, 40)),
          `a secret in plain text: ${secret.slice(0, 12)}…`,
        );
      }
      assert.ok(!raw.includes("ENGINE-TIER-NOT-A-REAL-KEY"), "the deploy key");
      assert.ok(!raw.includes(sandbox.passphrase), "the passphrase");
    });
  });

  describe("4. failure paths, refresh and destroy", () => {
    it("released the engine's lock and the CLI's lock after the failed up", () => {
      assert.deepEqual(sandbox.engineLocks(), []);
      assert.deepEqual(sandbox.cliLocks(), []);
    });

    it("refreshes the stack", async () => {
      const before = fs.readFileSync(stackFile);
      const run = await sandbox.cli(["refresh", STACK], secretEnv);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.ok(fs.readFileSync(stackFile).equals(before), "stack file restored byte for byte");
      writeRecording("refresh-foundation-engine", run.events, sandbox);
    });

    it("refuses to destroy the protected machine secrets, naming them", async () => {
      const run = await sandbox.cli(["destroy", STACK], secretEnv);
      assert.equal(run.code, ExitCode.failed, explain(run));
      assert.match(run.stderr, /engine-secrets/);
      assert.match(run.stderr, /protected/);
      writeRecording("destroy-foundation-engine-protected", run.events, sandbox);
      assert.deepEqual(sandbox.engineLocks(), []);
    });

    it("destroys the stack once the secrets are unprotected", async () => {
      const unprotect = sandbox.pulumi(["state", "unprotect", "--all", "--yes", "--stack", STACK]);
      assert.equal(unprotect.code, 0, unprotect.stderr);
      const run = await sandbox.cli(["destroy", STACK], secretEnv);
      assert.equal(run.code, ExitCode.ok, explain(run));
      const state = JSON.parse(fs.readFileSync(sandbox.stateFile(PROJECT, STACK), "utf8")) as {
        checkpoint: { latest?: { resources?: unknown[] } };
      };
      assert.deepEqual(state.checkpoint.latest?.resources ?? [], []);
      writeRecording("destroy-foundation-engine", run.events, sandbox);
    });
  });
});

/** Every secret's plaintext in a `pulumi stack export --show-secrets` deployment. */
function secretPlaintexts(deployment: unknown): string[] {
  const found: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") {
      const record = value as Record<string, unknown>;
      if (record["4dabf18193072939515e22adb298388d"] === "1b47061264138c4ac30d75fd1eb44270") {
        const plaintext = record.plaintext;
        if (typeof plaintext === "string") collect(JSON.parse(plaintext) as unknown);
        return;
      }
      Object.values(record).forEach(walk);
    }
  };
  const collect = (value: unknown): void => {
    if (typeof value === "string" && value.length >= 16) found.push(value);
    else if (Array.isArray(value)) value.forEach(collect);
    else if (value && typeof value === "object") Object.values(value).forEach(collect);
  };
  walk(deployment);
  return found;
}

export type { EngineEvent };
