// The foundation stack's checks beyond structure, in the order their problems are listed. Each one is a
// `Rule` over the parsed sections; see rules.ts for the older ones.
import { clusterRanges, nodeAddresses, unicastMacs, vipAddress } from "./addresses";
import { nodeLabels } from "./kubernetesSyntax";
import { openstackAntiAffinity, quorumPlacement } from "./quorum";
import type { Rule } from "./rule";
import {
  dnsRecords,
  fluxSettings,
  openbaoRotation,
  proxmoxEndpoint,
  workloadPlacement,
} from "./services";
import { talosPatches } from "./talosPatches";

/** Checks added for stack files that would break a real cluster or leak a credential. */
export const CHECKS: readonly Rule[] = [
  quorumPlacement,
  openstackAntiAffinity,
  workloadPlacement,
  nodeAddresses,
  vipAddress,
  clusterRanges,
  unicastMacs,
  nodeLabels,
  proxmoxEndpoint,
  fluxSettings,
  dnsRecords,
  openbaoRotation,
  talosPatches,
];

export {
  checkPlainTextCredentials,
  checkUrlCredential,
  configSetSecretCommand,
} from "./credentials";
export { checkTopLevelKeys } from "./topLevelKeys";
export { checkTalosPatch } from "./talosPatches";
