// The one interface every platform implements. The cluster component only knows how a node takes its
// configuration (pushed to an address, or handed over as user data at creation) and where it answers.
import * as pulumi from "@pulumi/pulumi";
import type { NodeSpec } from "../spec/types";

/** What the Talos provider does to a node when its pushed configuration is removed from the stack. */
export interface OnDestroyAction {
  readonly graceful: boolean;
  readonly reboot: boolean;
  readonly reset: boolean;
}

/** How a node receives its machine configuration. */
export type ConfigDelivery =
  /**
   * Pushed to the node's Talos API (maintenance mode on first apply). With `installAddress` the first
   * push goes there (the address the node has in maintenance mode) and every later one to its
   * configured address.
   */
  | {
      readonly kind: "push";
      readonly onDestroy?: OnDestroyAction;
      readonly installAddress?: string;
    }
  /** Handed to the machine at creation (cloud user data); later changes pushed when it is reachable. */
  | { readonly kind: "userData"; readonly pushChanges: boolean };

/** A node's machine, whatever it runs on. Implemented by one component per platform. */
export interface TalosMachine extends pulumi.ComponentResource {
  /** Where the node's Talos API answers (port 50000); for some cloud nodes known only once they exist. */
  readonly talosAddress: pulumi.Input<string>;
  /**
   * The address its kubelet reports as its node IP (primary service family): health checks find the
   * node in Kubernetes by it, and control planes reach the node there. Not always `talosAddress`:
   * an OCI instance is reached on its public IP but reports its private one.
   */
  readonly kubeletAddress: pulumi.Input<string>;
  readonly delivery: ConfigDelivery;
  /**
   * The platform resource that is the machine (a VM, an instance); none for bare metal. Its
   * replacement is a new machine that knows nothing of the old one's config, so the node's
   * pushed config is replaced with it (`replaceWith`) and reaches the new machine.
   */
  readonly machineResource?: pulumi.CustomResource;
}

/** What a platform needs to create one node's machine. */
export interface MachineRequest {
  readonly node: NodeSpec;
  /** The node's complete machine configuration (secret), for platforms that deliver it as user data. */
  readonly machineConfiguration: pulumi.Output<string>;
  /** Protect the machine from deletion (control planes). */
  readonly protect: boolean;
  /**
   * Takes the id of the node's data volume (OpenStack `dataVolumeSize`) once the machine creates it:
   * the node's config selects that disk by it. The machine must call it, before the config is read.
   */
  readonly dataVolumeId?: (id: pulumi.Output<string>) => void;
}
