import type { EngineEvent, StepEventMetadata } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { criticalReason, taggedControlPlane } from "../../automation/critical";
import { ExitCode } from "../../automation/errors";
import {
  SUMMARY_MARKER,
  mergeSections,
  previewSection,
  readSections,
  renderSummary,
  skippedSection,
  writeSummarySection,
} from "../../automation/summary";
import { cleanupRepos, loadEngineEvents, makeRepo, testContext } from "./helpers";

function section(layer: string, env: string, fixture: string, ok = true) {
  return previewSection({ layer, env, events: loadEngineEvents(fixture), ok });
}

/** The engine's own counts from the fixture's summary event. */
function engineCounts(fixture: string) {
  const summary = loadEngineEvents(fixture).find((e) => e.summaryEvent)?.summaryEvent;
  const changes = summary?.resourceChanges ?? {};
  return {
    create: changes.create ?? 0,
    update: changes.update ?? 0,
    replace: changes.replace ?? 0,
    delete: changes.delete ?? 0,
  };
}

/** The lines of a Markdown table whose first cell is `kind`. */
function rows(markdown: string, kind: string): string[] {
  return markdown.split("\n").filter((line) => line.startsWith(`| ${kind} |`));
}

describe("preview summary for pull requests", () => {
  let dir: string;
  beforeEach(() => {
    dir = makeRepo();
  });
  afterEach(cleanupRepos);

  it("counts creates, updates, replaces and deletes as the engine does", () => {
    for (const [layer, env, fixture] of [
      ["foundation", "staging", "preview-foundation-staging"],
      ["foundation", "prod", "preview-foundation-prod-protected"],
    ]) {
      assert.deepEqual(section(layer, env, fixture).counts, engineCounts(fixture), fixture);
    }
  });

  it("counts and tables the changes of a preview recorded from the real engine", () => {
    const s = section("foundation", "engine", "preview-foundation-engine");
    assert.equal(s.status, "ok");
    // The engine's own count (9) includes the stack resource itself, which a summary leaves out.
    assert.equal(engineCounts("preview-foundation-engine").create, 9);
    assert.equal(s.counts.create, 8);
    const markdown = renderSummary([s]);
    for (const [name, type] of [
      ["engine-secrets", "talos:machine/secrets:Secrets"],
      ["engine-cp-1-config", "talos:machine/configurationApply:ConfigurationApply"],
      ["engine-worker-1-config", "talos:machine/configurationApply:ConfigurationApply"],
      ["engine-bootstrap", "talos:machine/bootstrap:Bootstrap"],
      ["engine-kubeconfig", "talos:cluster/kubeconfig:Kubeconfig"],
    ]) {
      assert.ok(
        rows(markdown, "create").includes(`| create | \`${name}\` | \`${type}\` |  |`),
        name,
      );
    }
    assert.doesNotMatch(markdown, /pulumi:pulumi:Stack/);
    assert.doesNotMatch(markdown, /\[!CAUTION\]/, "creating the protected secrets is no caution");
  });

  it("tables every changed resource with the properties that changed, a replacement once", () => {
    const markdown = renderSummary([
      section("foundation", "staging", "preview-foundation-staging"),
    ]);
    assert.deepEqual(rows(markdown, "replace"), [
      "| replace | `staging-stg-worker-2-vm` | `proxmoxve:index/vmLegacy:VmLegacy` | `vmId` |",
    ]);
    assert.deepEqual(rows(markdown, "update"), [
      "| update | `staging-stg-cp-1-config` | `talos:machine/configurationApply:ConfigurationApply` | `configPatches` |",
      "| update | `staging-stg-cp-2-vm` | `proxmoxve:index/vmLegacy:VmLegacy` | `memory` |",
    ]);
    assert.equal(rows(markdown, "create").length, 3);
    assert.match(markdown, /^\| foundation \| staging \| 3 \| 2 \| 1 \| 0 \| changes \|$/m);
  });

  it("does not call out an update of a protected control plane or the replacement of a worker", () => {
    const markdown = renderSummary([
      section("foundation", "staging", "preview-foundation-staging"),
    ]);
    assert.doesNotMatch(markdown, /\[!CAUTION\]/);
  });

  it("calls out, in bold at the top, replacing the protected machine secrets and deleting a control-plane VM", () => {
    const markdown = renderSummary([
      section("foundation", "prod", "preview-foundation-prod-protected", false),
    ]);
    const lines = markdown.split("\n");
    const caution = lines.indexOf("> [!CAUTION]");
    assert.ok(
      caution > 0 && caution < lines.findIndex((l) => l.startsWith("| layer")),
      "callouts come first",
    );
    const callouts = lines.filter((l) => l.startsWith("> **"));
    assert.deepEqual(callouts, [
      "> **foundation/prod: replaces `talos:machine/secrets:Secrets` `prod-secrets`: protected; the cluster's machine secrets: a new one orphans every node; the engine refuses to replace it, so the preview fails**  ",
      "> **foundation/prod: deletes `proxmoxve:index/vmLegacy:VmLegacy` `prod-prod-cp-3-vm`: a control-plane machine: it holds an etcd member**  ",
    ]);
    assert.doesNotMatch(callouts.join("\n"), /worker/, "deleting a worker is not critical");
    assert.match(markdown, /^\| \*\*delete\*\* \| `prod-prod-cp-3-vm` \|/m);
    assert.match(markdown, /^\| delete \| `prod-prod-worker-2-vm` \|/m);
  });

  it("calls out replacing the state bucket and deleting the KMS key and key ring, which the engine refuses", () => {
    const s = section("bootstrap", "shared", "preview-bootstrap-shared", false);
    assert.deepEqual(
      s.critical.map((c) => `${c.kind} ${c.type} ${c.name}: ${c.reason}`),
      [
        "replace gcp:storage/bucket:Bucket state-bucket: protected; a state bucket: it holds the Pulumi state of the other layers; the engine refuses to replace it, so the preview fails",
        "delete gcp:kms/cryptoKey:CryptoKey state-secrets-key: protected; a KMS key: the stack secrets encrypted with it become unreadable; the engine refuses to delete it, so the preview fails",
        "delete gcp:kms/keyRing:KeyRing state-secrets-key-ring: protected; a KMS key ring: the keys in it and what they encrypt go with it; the engine refuses to delete it, so the preview fails",
      ],
    );
    // The planned deletes are listed although the engine refuses them (its own counts leave out
    // failed steps); the default-free explicit provider and the component are not changes.
    assert.deepEqual(s.counts, { create: 1, update: 0, replace: 1, delete: 2 });
    assert.match(
      renderSummary([s]),
      /^\| bootstrap \| shared \| 1 \| 0 \| 1 \| 2 \| \*\*failed\*\* \|$/m,
    );
  });

  it("merges staging and prod previews into one file with one marker, replacing a rerun's section", () => {
    const file = path.join(dir, "preview.md");
    writeSummarySection(file, section("app", "staging", "preview-foundation-staging"));
    writeSummarySection(file, section("app", "prod", "preview-foundation-prod-protected", false));
    writeSummarySection(
      file,
      skippedSection("app", "staging", "app/Pulumi.yaml does not exist yet."),
    );
    const markdown = fs.readFileSync(file, "utf8");
    assert.ok(markdown.startsWith(`${SUMMARY_MARKER}\n`));
    assert.equal(markdown.split(SUMMARY_MARKER).length, 2, "one marker");
    assert.deepEqual(
      readSections(markdown).map((s) => `${s.layer}/${s.env} ${s.status}`),
      ["app/staging skipped", "app/prod failed"],
    );
    assert.equal(
      (markdown.match(/^### app \/ staging$/gm) ?? []).length,
      1,
      "no duplicate section",
    );
    assert.match(
      markdown,
      /^### app \/ staging\n\nSkipped: app\/Pulumi\.yaml does not exist yet\.$/m,
    );
  });

  it("orders sections by layer, environments in the order they were previewed", () => {
    const app = skippedSection("app", "staging", "x");
    const bootstrapProd = skippedSection("bootstrap", "prod", "x");
    const foundationProd = skippedSection("foundation", "prod", "x");
    const foundationStaging = skippedSection("foundation", "staging", "x");
    const merged = [app, foundationProd, bootstrapProd, foundationStaging].reduce(
      mergeSections,
      [],
    );
    assert.deepEqual(
      merged.map((s) => `${s.layer}/${s.env}`),
      ["bootstrap/prod", "foundation/prod", "foundation/staging", "app/staging"],
    );
  });

  it("leaves a file that is not a preview summary alone", () => {
    const file = path.join(dir, "NOTES.md");
    fs.writeFileSync(file, "# my notes\n");
    assert.throws(
      () => writeSummarySection(file, skippedSection("app", "prod", "x")),
      /--summary: the file exists and is not a preview summary, so it is left alone/,
    );
    assert.equal(fs.readFileSync(file, "utf8"), "# my notes\n");
  });

  it("refuses a --summary file that is not a summary before running the engine", async () => {
    const root = makeRepo();
    fs.writeFileSync(path.join(root, "README.md"), "# keep me\n");
    const ctx = testContext({ repoRoot: root });
    assert.equal(
      await runCli(["preview", "staging", "--summary", "README.md"], ctx),
      ExitCode.usage,
    );
    assert.match(ctx.stderr.text, /^--summary: the file exists and is not a preview summary/m);
    assert.equal(ctx.workspaces.calls.length, 0);
    assert.equal(fs.readFileSync(path.join(root, "README.md"), "utf8"), "# keep me\n");
  });

  it("shows a failed preview's errors in a code block that their backticks cannot break", () => {
    const s = previewSection({
      layer: "app",
      env: "prod",
      events: [],
      ok: false,
      errors: ["program failed: ```oops``` | pipe"],
    });
    const markdown = renderSummary([s]);
    assert.match(
      markdown,
      /\*\*The preview failed:\*\*\n\n````text\nprogram failed: ```oops``` \| pipe\n````/,
    );
    assert.match(markdown, /^\| app \| prod \| 0 \| 0 \| 0 \| 0 \| \*\*failed\*\* \|$/m);
  });

  it("keeps resource names with pipes and backticks inside their table cell", () => {
    const urn = "urn:pulumi:prod::app::custom:index:Thing::we|ird`name";
    const event: EngineEvent = {
      sequence: 1,
      timestamp: 1,
      resourcePreEvent: {
        metadata: { op: "create", urn, type: "custom:index:Thing", provider: "" },
        planning: true,
      },
    };
    const markdown = renderSummary([
      previewSection({ layer: "app", env: "prod", events: [event], ok: true }),
    ]);
    assert.deepEqual(rows(markdown, "create"), [
      "| create | ``we\\|ird`name`` | `custom:index:Thing` |  |",
    ]);
  });

  it("stays within a PR comment's size by dropping the tables, never the callouts", () => {
    const events: EngineEvent[] = [];
    for (let i = 0; i < 3000; i++) {
      const urn = `urn:pulumi:prod::talos-platform::proxmoxve:index/vmLegacy:VmLegacy::worker-${i}-vm-with-a-long-name`;
      events.push({
        sequence: i,
        timestamp: 1,
        resourcePreEvent: {
          metadata: { op: "create", urn, type: "proxmoxve:index/vmLegacy:VmLegacy", provider: "" },
          planning: true,
        },
      });
    }
    const big = previewSection({ layer: "foundation", env: "prod", events, ok: true });
    assert.equal(big.counts.create, 3000);

    const one = renderSummary([big]);
    assert.equal(rows(one, "create").length, 100, "a table lists 100 rows");
    assert.match(one, /^… and 2900 more\.$/m);

    const critical = section("foundation", "staging", "preview-foundation-prod-protected");
    const many = [critical, ...Array.from({ length: 8 }, (_, i) => ({ ...big, env: `prod-${i}` }))];
    const markdown = renderSummary(many);
    assert.ok(markdown.length <= 60_000, `${markdown.length} characters`);
    assert.match(markdown, /> \*\*foundation\/staging: replaces `talos:machine\/secrets:Secrets`/);
    assert.match(markdown, /^3000 changed resources \(table left out to fit a comment\)\.$/m);
    assert.equal(rows(markdown, "create").length, 0);
    assert.equal(readSections(markdown).length, 9, "the data block still holds every section");
  });

  it("writes the summary of each preview run, even a failed one, relative to where the operator ran it", async () => {
    const root = makeRepo();
    const cwd = path.join(root, "sub");
    fs.mkdirSync(cwd);
    const staging = testContext({ repoRoot: root, cwd });
    staging.workspaces.runs.preview = { events: loadEngineEvents("preview-foundation-staging") };
    assert.equal(await runCli(["preview", "staging", "--summary", "pr.md"], staging), ExitCode.ok);

    const prod = testContext({ repoRoot: root, cwd });
    prod.workspaces.runs.preview = {
      events: loadEngineEvents("preview-foundation-prod-protected"),
      error: new Error("code: 255\n stdout: \n stderr: error: preview failed\n err?: \n"),
    };
    assert.equal(await runCli(["preview", "prod", "--summary", "pr.md"], prod), ExitCode.failed);

    const markdown = fs.readFileSync(path.join(cwd, "pr.md"), "utf8");
    assert.match(markdown, /^\| foundation \| staging \| 3 \| 2 \| 1 \| 0 \| changes \|$/m);
    assert.match(markdown, /^\| foundation \| prod \| 0 \| 0 \| 1 \| 2 \| \*\*failed\*\* \|$/m);
    assert.match(markdown, /unable to replace resource/);
  });

  it("warns in CI that a preview against the embedded backend compares with an empty state", async () => {
    const root = makeRepo();
    const ctx = testContext({ repoRoot: root, env: { CI: "true" } });
    ctx.workspaces.runs.preview = { events: loadEngineEvents("preview-foundation-staging") };
    assert.equal(await runCli(["preview", "staging", "--summary", "pr.md"], ctx), ExitCode.ok);
    const markdown = fs.readFileSync(path.join(root, "pr.md"), "utf8");
    assert.match(
      markdown,
      /^### foundation \/ staging\n\n\*\*Note:\*\* foundation\/staging uses the embedded backend, which is empty on a CI runner: every resource shows as new\. Name the stack's backend \(talos-platform:backend in its stack file\) or set PULUMI\\_BACKEND\\_URL\.$/m,
    );
    assert.match(ctx.stderr.text, /^note: foundation\/staging uses the embedded backend/m);

    const named = makeRepo();
    const withBackend = testContext({
      repoRoot: named,
      env: { CI: "true", PULUMI_BACKEND_URL: "gs://state", PULUMI_CONFIG_PASSPHRASE: "x" },
    });
    assert.equal(
      await runCli(["preview", "staging", "--summary", "pr.md"], withBackend),
      ExitCode.ok,
    );
    assert.doesNotMatch(fs.readFileSync(path.join(named, "pr.md"), "utf8"), /Note:/);
  });

  it("writes a skipped section with --skip-missing-layer", async () => {
    const root = makeRepo();
    const ctx = testContext({ repoRoot: root });
    const argv = [
      "preview",
      "staging",
      "--layer",
      "app",
      "--summary",
      "pr.md",
      "--skip-missing-layer",
    ];
    assert.equal(await runCli(argv, ctx), ExitCode.ok);
    const [only] = readSections(fs.readFileSync(path.join(root, "pr.md"), "utf8"));
    assert.deepEqual(
      [only.layer, only.env, only.status, only.messages],
      ["app", "staging", "skipped", ["app/Pulumi.yaml does not exist yet."]],
    );
  });

  it("refuses a seed comment whose data block is not preview sections, through the command line, and leaves the file alone", async () => {
    const root = makeRepo();
    const forged = [{ layer: "app", env: "prod", status: "ok", counts: {}, html: "<img src=x>" }];
    const seed = `${SUMMARY_MARKER}\n<!-- talos-platform:preview-data:${JSON.stringify(forged)} -->\n`;
    fs.writeFileSync(path.join(root, "pr.md"), seed);
    const argv = [
      "preview",
      "staging",
      "--layer",
      "app",
      "--summary",
      "pr.md",
      "--skip-missing-layer",
    ];
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(argv, ctx), ExitCode.usage);
    assert.equal(fs.readFileSync(path.join(root, "pr.md"), "utf8"), seed);
    assert.throws(() => readSections(seed), /not a list of preview sections/);
  });
});

describe("critical resources", () => {
  const vm = (inputs: Record<string, unknown>, protect = false): StepEventMetadata => ({
    op: "delete",
    urn: "urn:pulumi:prod::talos-platform::proxmoxve:index/vmLegacy:VmLegacy::x",
    type: "proxmoxve:index/vmLegacy:VmLegacy",
    provider: "",
    old: {
      type: "proxmoxve:index/vmLegacy:VmLegacy",
      urn: "urn:pulumi:prod::talos-platform::proxmoxve:index/vmLegacy:VmLegacy::x",
      id: "3011",
      parent: "",
      inputs,
      outputs: inputs,
      provider: "",
      ...(protect ? { protect: true } : {}),
    },
  });

  it("recognises control planes by the Proxmox tags, OCI freeform tags and OpenStack tags or metadata", () => {
    assert.equal(taggedControlPlane({ tags: ["talos", "prod", "controlplane"] }), true);
    assert.equal(taggedControlPlane({ freeformTags: { "talos-role": "controlplane" } }), true);
    assert.equal(taggedControlPlane({ metadata: { "talos-role": "controlplane" } }), true);
    assert.equal(taggedControlPlane({ tags: ["talos", "prod", "worker"] }), false);
    assert.equal(taggedControlPlane({ freeformTags: { "talos-role": "worker" } }), false);
    assert.equal(taggedControlPlane(undefined), false);
  });

  it("treats anything protected in the state as critical", () => {
    assert.equal(criticalReason(vm({ tags: ["worker"] }, true)), "protected");
    assert.equal(criticalReason(vm({ tags: ["worker"] })), undefined);
    assert.match(criticalReason(vm({ tags: ["controlplane"] })) ?? "", /control-plane machine/);
  });
});
