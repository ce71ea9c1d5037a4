// The program's own "no second etcd bootstrap" guard: a beforeCreate hook on the Bootstrap that reads
// the stack's last outputs through a StackReference to the stack itself. The hook is run here the way
// the engine runs it (through the program's callback server) before it would create the Bootstrap.
import { strict as assert } from "node:assert";
import { createHash } from "node:crypto";
import { stringify } from "yaml";
import {
  bootstrapHistory,
  caFingerprint,
  isSecondBootstrap,
} from "../components/talos/bootstrapRecord";
import { proxmoxCluster } from "./fixtures";
import { isSecret, runFoundation } from "./harness";
import { Recorder } from "./mocks";

const BOOTSTRAP = "talos:machine/bootstrap:Bootstrap";
const OWN_STACK = "organization/talos-platform/test";
const HOOK = "demo-bootstrap-once";
/** The URN the engine gives the Bootstrap (pinned: changing it makes the engine create it anew). */
const BOOTSTRAP_URN =
  "urn:pulumi:test::talos-platform::platform:talos:Cluster$talos:machine/bootstrap:Bootstrap::demo-bootstrap";
/** The Talos CA the mocked machine secrets hand out, and its fingerprint computed independently. */
const TALOS_CA = "-----BEGIN TALOS CA-----\nVEFMT1MgQ0E=\n-----END TALOS CA-----";
const TALOS_CA_SHA256 = createHash("sha256").update(TALOS_CA).digest("hex");
const OTHER_CA_SHA256 = createHash("sha256").update("another cluster's CA").digest("hex");

/** A talosconfig as the provider writes it: the CA base64-encoded. */
function talosconfig(ca: string): string {
  return stringify({
    context: "demo",
    contexts: { demo: { endpoints: ["192.0.2.11"], ca: Buffer.from(ca).toString("base64") } },
  });
}

/** Runs the program with the stack's last outputs, then its hooks as the engine would before a create. */
async function createBootstrapWith(
  lastOutputs: Record<string, unknown> | undefined,
  options: { preview?: boolean } = {},
): Promise<{ recorder: Recorder; error: string | undefined }> {
  const recorder = new Recorder();
  if (lastOutputs) recorder.behaviour.stackOutputs = { [OWN_STACK]: lastOutputs };
  await runFoundation(proxmoxCluster(), { recorder, ...options });
  // The hooks the Bootstrap's registration bound, as the engine's create step runs them.
  const error = await recorder.runHooks(recorder.named("demo-bootstrap"), "beforeCreate", {
    newInputs: { node: "192.0.2.11", timeouts: { create: "10m" } },
  });
  return { recorder, error };
}

/** The refusal, as the project writes problems: `<what>: <problem>; got <value>. <fix>`. */
function refusal(evidence: string): RegExp {
  const text =
    `etcd bootstrap: up was about to create the cluster's Bootstrap (demo-bootstrap) although etcd ` +
    `was bootstrapped (${evidence}), which would bootstrap etcd a second time; got cp-1 ` +
    `(192.0.2.11) would be bootstrapped: a second, empty etcd beside the running one. Nothing was ` +
    `bootstrapped. If a change renamed or moved the Bootstrap resource, give it an alias to its old ` +
    `name; if the state lost it, put it back from the export taken before ` +
    `(docs/runbooks/lost-proxmox-host.md step 6). A cluster whose etcd is lost everywhere is ` +
    "restored with `npm run platform -- etcd restore <env> --from FILE`, never bootstrapped anew";
  return new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
}

describe("the program never bootstraps etcd a second time", () => {
  describe("what it registers", () => {
    let recorder: Recorder;
    let resolved: any;
    let outputs: any;
    before(async () => ({ recorder, resolved, outputs } = await runFoundation(proxmoxCluster())));

    it("binds its guard to the Bootstrap's beforeCreate, run in previews too", () => {
      const [bootstrap] = recorder.ofType(BOOTSTRAP);
      assert.deepEqual(bootstrap.options.hooks, { beforeCreate: [HOOK] });
      assert.deepEqual(
        recorder.hooks.map((h) => ({ name: h.name, onDryRun: h.onDryRun })),
        [{ name: HOOK, onDryRun: true }],
      );
      // The rest of the Bootstrap is unchanged: a kept Bootstrap never sees its later changes.
      assert.deepEqual(bootstrap.options.ignoreChanges, [
        "node",
        "endpoint",
        "clientConfiguration",
        "timeouts",
      ]);
    });

    it("reads the stack's own last outputs through one StackReference, before the cluster", () => {
      const [reference, ...more] = recorder.ofType("pulumi:pulumi:StackReference");
      assert.deepEqual(more, []);
      assert.equal(reference.name, "demo-last-outputs");
      assert.equal(reference.inputs.name, OWN_STACK);
      assert.ok(
        recorder.resources.indexOf(reference) < recorder.resources.indexOf(recorder.named("demo")),
      );
    });

    it("keeps the Bootstrap's URN (a new one is a create: add an alias to the old one instead)", () => {
      assert.equal(
        recorder.named("demo").urn,
        "urn:pulumi:test::talos-platform::platform:talos:Cluster::demo",
      );
      assert.equal(recorder.named("demo-bootstrap").urn, BOOTSTRAP_URN);
    });

    it("records the bootstrap as an output naming the cluster's Talos CA, not secret", async () => {
      assert.deepEqual(resolved.etcdBootstrap, { talosCaSha256: TALOS_CA_SHA256 });
      assert.equal(await isSecret(outputs.etcdBootstrap), false);
    });
  });

  describe("its hook, before the engine creates the Bootstrap", () => {
    it("lets a first bootstrap through: a stack never deployed has no outputs", async () => {
      const { error } = await createBootstrapWith(undefined);
      assert.equal(error, undefined);
    });

    it("refuses a cluster the outputs record as bootstrapped (a lost Bootstrap, a renamed one)", async () => {
      const { error } = await createBootstrapWith({
        etcdBootstrap: { talosCaSha256: TALOS_CA_SHA256 },
      });
      assert.match(error ?? "", refusal("the stack has an etcdBootstrap output"));
    });

    it("refuses in a preview as well", async () => {
      const { error } = await createBootstrapWith(
        { etcdBootstrap: { talosCaSha256: TALOS_CA_SHA256 } },
        { preview: true },
      );
      assert.match(error ?? "", refusal("the stack has an etcdBootstrap output"));
    });

    it("refuses a stack last deployed before the record: its kubeconfig, named by its talosconfig's CA", async () => {
      const { error } = await createBootstrapWith({
        kubeconfig: "apiVersion: v1\n",
        talosconfig: talosconfig(TALOS_CA),
      });
      assert.match(error ?? "", refusal("the stack has a kubeconfig output"));
    });

    it("lets through the bootstrap of a new cluster whose machine secrets replaced the recorded one's", async () => {
      const recorded = await createBootstrapWith({
        etcdBootstrap: { talosCaSha256: OTHER_CA_SHA256 },
      });
      assert.equal(recorded.error, undefined);
      const legacy = await createBootstrapWith({
        kubeconfig: "apiVersion: v1\n",
        talosconfig: talosconfig("another cluster's CA"),
      });
      assert.equal(legacy.error, undefined);
    });

    it("refuses when the outputs say bootstrapped but name no cluster (the safe side)", async () => {
      const { error } = await createBootstrapWith({ kubeconfig: "apiVersion: v1\n" });
      assert.match(error ?? "", refusal("the stack has a kubeconfig output"));
    });
  });

  describe("the rule, shared with the CLI", () => {
    it("fingerprints a CA the same whether base64-encoded (as the provider hands it out) or PEM", () => {
      assert.equal(caFingerprint(TALOS_CA), TALOS_CA_SHA256);
      assert.equal(caFingerprint(Buffer.from(`${TALOS_CA}\n`).toString("base64")), TALOS_CA_SHA256);
    });

    it("reads the record first, then a kubeconfig; nothing, or an empty kubeconfig, is no bootstrap", () => {
      assert.deepEqual(bootstrapHistory({}), { bootstrapped: false });
      assert.deepEqual(bootstrapHistory({ kubeconfig: "" }), { bootstrapped: false });
      assert.deepEqual(
        bootstrapHistory({
          etcdBootstrap: { talosCaSha256: TALOS_CA_SHA256 },
          kubeconfig: "apiVersion: v1\n",
          talosconfig: talosconfig("another cluster's CA"),
        }),
        {
          bootstrapped: true,
          talosCaSha256: TALOS_CA_SHA256,
          evidence: "the stack has an etcdBootstrap output",
        },
      );
      // A malformed record still says bootstrapped, naming no cluster.
      assert.deepEqual(bootstrapHistory({ etcdBootstrap: { talosCaSha256: "x" } }), {
        bootstrapped: true,
        talosCaSha256: undefined,
        evidence: "the stack has an etcdBootstrap output",
      });
    });

    it("never refuses while the CA is unknown: only a preview that creates the machine secrets has none", () => {
      const history = bootstrapHistory({ etcdBootstrap: { talosCaSha256: TALOS_CA_SHA256 } });
      assert.equal(isSecondBootstrap(history, undefined), false);
      const unnamed = bootstrapHistory({ kubeconfig: "apiVersion: v1\n" });
      assert.equal(isSecondBootstrap(unnamed, undefined), false);
      assert.equal(isSecondBootstrap(unnamed, TALOS_CA_SHA256), true);
      assert.equal(isSecondBootstrap(history, TALOS_CA_SHA256), true);
      assert.equal(isSecondBootstrap(bootstrapHistory({}), TALOS_CA_SHA256), false);
    });
  });
});
