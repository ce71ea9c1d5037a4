// Every check of a foundation stack file, in the order its problems are listed. Each rule lives in the
// file of its subject; this list only orders them. (The app and bootstrap layers' checks: ../app.ts,
// ../bootstrap.ts.)
import {
  clusterRanges,
  kubeletFamily,
  nodeAddresses,
  nodeNetworks,
  publicMaintenance,
  unicastMacs,
} from "./addresses";
import { caRotationNodes } from "./caRotation";
import { ciliumRouting } from "./cilium";
import { plainTextCredentials, proxmoxEndpoint } from "./credentials";
import { endpoint } from "./endpoint";
import { etcdBackups } from "./etcdBackups";
import { architectureExtensions, imageFactory, proxmoxImage } from "./images";
import { unknownKeys } from "./keys";
import { nodeLabels } from "./labels";
import {
  controlPlaneMemory,
  maintenanceAddresses,
  openstackSubnets,
  platformSettings,
  proxmoxHosts,
  uniqueness,
  workloadPlacement,
} from "./nodes";
import { ociNsgLimit, ociShapeArchitecture } from "./oci";
import { talosPatches } from "./patches";
import { applyMode, controlPlaneCount, openstackAntiAffinity, quorumPlacement } from "./quorum";
import type { Rule } from "./rule";
import { sectionSchemas } from "./schema";
import {
  dnsRecords,
  fluxSettings,
  openbaoCredentials,
  openbaoRotation,
  services,
} from "./services";
import { connectivity, routedSites } from "./sites";
import { userDataSize } from "./userData";
import { versions } from "./versions";
import { vip } from "./vip";

/** The foundation's rules, in the order their problems are listed. */
export const RULES: readonly Rule[] = [
  unknownKeys,
  plainTextCredentials,
  sectionSchemas,
  versions,
  endpoint,
  imageFactory,
  controlPlaneCount,
  uniqueness,
  maintenanceAddresses,
  platformSettings,
  openstackSubnets,
  proxmoxHosts,
  nodeNetworks,
  controlPlaneMemory,
  vip,
  services,
  connectivity,
  routedSites,
  ciliumRouting,
  kubeletFamily,
  applyMode,
  proxmoxImage,
  architectureExtensions,
  ociShapeArchitecture,
  ociNsgLimit,
  openbaoCredentials,
  quorumPlacement,
  openstackAntiAffinity,
  workloadPlacement,
  nodeAddresses,
  publicMaintenance,
  clusterRanges,
  unicastMacs,
  nodeLabels,
  caRotationNodes,
  proxmoxEndpoint,
  fluxSettings,
  dnsRecords,
  openbaoRotation,
  etcdBackups,
  talosPatches,
  userDataSize,
];
