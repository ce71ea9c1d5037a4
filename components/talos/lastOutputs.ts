// The stack's own last outputs, read through a StackReference to the stack itself: what the last
// `up` recorded about the cluster (its versions, control planes and installers; whether etcd was
// bootstrapped). The engine's builtin provider answers with the stack's latest checkpoint, which
// during an update still holds the previous run's outputs; a stack never deployed has none.
import * as pulumi from "@pulumi/pulumi";
import { BOOT_RECORDS_OUTPUT } from "./bootRecords";
import { BOOTSTRAP_OUTPUT } from "./bootstrapRecord";

/** The outputs the program reads back. */
const READ = [
  BOOTSTRAP_OUTPUT,
  "kubeconfig",
  "talosconfig",
  "nodes",
  "talosVersion",
  "kubernetesVersion",
  "installerImages",
  BOOT_RECORDS_OUTPUT,
] as const;

/** The running stack's fully qualified name, as a StackReference to it takes it. */
export function ownStackName(): string {
  return `${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`;
}

/** The last outputs' values (secrets unwrapped, for comparison only), or why they could not be read. */
export type LastOutputs =
  { readonly values: Readonly<Record<string, unknown>> } | { readonly error: string };

/** Reads the stack's last outputs through `<cluster>-last-outputs`. */
export async function readLastOutputs(clusterName: string): Promise<LastOutputs> {
  const reference = new pulumi.StackReference(`${clusterName}-last-outputs`, {
    name: ownStackName(),
  });
  try {
    const details = await Promise.all(READ.map((key) => reference.getOutputDetails(key)));
    return {
      values: Object.fromEntries(
        READ.map((key, i) => [key, details[i].value ?? details[i].secretValue]),
      ),
    };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}
