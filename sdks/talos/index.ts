// A typed SDK for the subset of the Talos provider (pulumiverse/pulumi-talos v0.8.1) this project uses.
// Same tokens, property names, secret outputs and module names as the registry package, so program code
// imports `@pulumiverse/talos` either way; the engine downloads the real plugin (see utilities.ts).
import * as pulumi from "@pulumi/pulumi";
import * as client from "./client";
import * as cluster from "./cluster";
import * as imagefactory from "./imagefactory";
import * as machine from "./machine";
import * as types from "./types";
import { getVersion } from "./utilities";

export { client, cluster, imagefactory, machine, types };

// Lets the engine rehydrate references to these resources (as generated SDKs do).
const resourceClasses = [
  machine.Secrets,
  machine.ConfigurationApply,
  machine.Bootstrap,
  cluster.Kubeconfig,
  imagefactory.Schematic,
] as const;
for (const cls of resourceClasses) {
  const [, module] = cls.__pulumiType.split(":");
  pulumi.runtime.registerResourceModule("talos", module, {
    version: getVersion(),
    construct: (name: string, type: string, urn: string): pulumi.Resource => {
      if (type !== cls.__pulumiType) {
        throw new Error(`unknown resource type ${type}`);
      }
      return new (cls as any)(name, undefined, { urn });
    },
  });
}
