import * as talos from "@pulumiverse/talos";
import { strict as assert } from "node:assert";
import { PLUGIN_DOWNLOAD_URL, PROVIDER_VERSION } from "../sdks/talos/utilities";
import { setupRun } from "./harness";
import { Recorder } from "./mocks";

// The provider schema facts shipped with the SDK (from pulumiverse/pulumi-talos v0.8.1).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const facts = require("../sdks/talos/provider-facts.json") as {
  version: string;
  pluginDownloadURL: string;
  resources: Record<
    string,
    { inputs: string[]; required: string[]; outputs: string[]; secret: string[] }
  >;
  functions: Record<string, { inputs: string[]; required: string[]; outputs: string[] }>;
};

const dummy = (name: string): unknown =>
  name === "timeouts"
    ? { create: "1m" }
    : name === "onDestroy"
      ? { reset: true }
      : name.startsWith("clientConfiguration")
        ? { caCertificate: "ca", clientCertificate: "crt", clientKey: "key" }
        : name === "configPatches"
          ? ["machine: {}"]
          : `value-of-${name}`;
const argsFor = (names: string[]) => Object.fromEntries(names.map((n) => [n, dummy(n)]));

const resources: [string, new (name: string, args: any, opts?: any) => any][] = [
  ["talos:machine/secrets:Secrets", talos.machine.Secrets],
  ["talos:machine/configurationApply:ConfigurationApply", talos.machine.ConfigurationApply],
  ["talos:machine/bootstrap:Bootstrap", talos.machine.Bootstrap],
  ["talos:cluster/kubeconfig:Kubeconfig", talos.cluster.Kubeconfig],
  ["talos:imageFactory/schematic:Schematic", talos.imagefactory.Schematic],
];

const invokes: [string, (args: any) => any][] = [
  ["talos:machine/getConfiguration:getConfiguration", talos.machine.getConfigurationOutput],
  ["talos:client/getConfiguration:getConfiguration", talos.client.getConfigurationOutput],
  ["talos:cluster/getHealth:getHealth", talos.cluster.getHealthOutput],
  ["talos:imageFactory/getUrls:getUrls", talos.imagefactory.getUrlsOutput],
];

describe("the local Talos SDK (drop-in for @pulumiverse/talos 0.8.1)", () => {
  let recorder: Recorder;
  beforeEach(async () => (recorder = await setupRun({})));

  it("pins the provider version and download URL of the facts", () => {
    assert.equal(PROVIDER_VERSION, facts.version);
    assert.equal(PLUGIN_DOWNLOAD_URL, facts.pluginDownloadURL);
  });

  for (const [token, Resource] of resources) {
    it(`registers ${token} with the schema's inputs, secret outputs and plugin`, async () => {
      const schema = facts.resources[token];
      const resource = new Resource("r", argsFor(schema.inputs));
      await recorder.settled();
      const [recorded] = recorder.ofType(token);
      assert.ok(recorded, `nothing registered as ${token}`);
      assert.deepEqual(Object.keys(recorded.inputs).sort(), [...schema.inputs].sort());
      assert.deepEqual(
        recorded.options.additionalSecretOutputs.slice().sort(),
        [...schema.secret].sort(),
      );
      for (const secret of schema.secret.filter((s) => schema.inputs.includes(s))) {
        assert.ok(recorded.secretPaths.includes(secret), `input ${secret} is not sent as a secret`);
      }
      assert.equal(recorded.options.version, "0.8.1");
      assert.equal(recorded.options.pluginDownloadURL, "github://api.github.com/pulumiverse");
      for (const output of schema.outputs)
        assert.ok(output in resource, `missing output property ${output}`);
    });
  }

  for (const [token, invoke] of invokes) {
    it(`calls ${token} with the schema's inputs and plugin`, async () => {
      const schema = facts.functions[token];
      invoke(argsFor(schema.inputs));
      await recorder.settled();
      const [call] = recorder.invokesOf(token);
      assert.ok(call, `no invoke of ${token}`);
      assert.deepEqual(Object.keys(call.inputs).sort(), [...schema.inputs].sort());
      assert.equal(call.version, "0.8.1");
      assert.equal(call.pluginDownloadURL, "github://api.github.com/pulumiverse");
    });
  }

  it("refuses a resource without its required inputs, like generated SDKs", () => {
    assert.throws(
      () => new talos.machine.ConfigurationApply("x", {} as any),
      /Missing required property 'node'/,
    );
    assert.throws(
      () => new talos.cluster.Kubeconfig("x", { node: "n" } as any),
      /Missing required property 'clientConfiguration'/,
    );
  });

  it("uses the registry package's module names", () => {
    assert.deepEqual(
      Object.keys(talos)
        .filter((k) => k !== "types")
        .sort(),
      ["client", "cluster", "imagefactory", "machine"],
    );
  });
});
