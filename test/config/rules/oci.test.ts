// components/config/rules/oci.ts: OCI nodes among OCI's limits (five NSGs per VNIC) and the one
// architecture of the cluster's OCI image.
import { cloudCluster, itRefuses, RuleCase } from "../../fixtures";

const fiveNsgs = [1, 2, 3, 4, 5].map((i) => `ocid1.networksecuritygroup.oc1..nsg${i}`);

const cases: RuleCase[] = [
  {
    rule: "a node's shape of another architecture than oci.architecture",
    base: cloudCluster,
    broken: (v) => (v.nodes[4].oci.shape = "VM.Standard.E5.Flex"),
    problems: [
      'nodes[4].oci.shape: VM.Standard.E5.Flex is an amd64 shape, and the cluster\'s OCI image is arm64 (oci.architecture); got "VM.Standard.E5.Flex". Use an arm64 shape (Ampere A1 or A2): every OCI node boots the one image',
    ],
    valid: (v) => (v.nodes[4].oci.shape = "VM.Standard.A2.Flex"),
  },
  {
    rule: "an Ampere node in an amd64 cluster",
    base: cloudCluster,
    broken: (v) => {
      v.oci.shape = "VM.Standard.E5.Flex";
      v.nodes[3].oci.shape = "VM.Standard.A1.Flex";
    },
    problems: [
      'nodes[3].oci.shape: VM.Standard.A1.Flex is an arm64 shape, and the cluster\'s OCI image is amd64 (oci.architecture); got "VM.Standard.A1.Flex". Use an amd64 shape (not Ampere): every OCI node boots the one image',
    ],
    valid: (v) => (v.oci.shape = "VM.Standard.E5.Flex"),
  },
  {
    rule: "the default shape against an explicit architecture",
    base: cloudCluster,
    broken: (v) => (v.oci.architecture = "amd64"),
    problems: [
      "oci.architecture: VM.Standard.A1.Flex is an arm64 shape, and the cluster's OCI image is amd64 (oci.architecture). Set oci.shape to an amd64 shape",
    ],
    valid: (v) => {
      v.oci.architecture = "amd64";
      v.oci.shape = "VM.Standard.E5.Flex";
    },
  },
  {
    rule: "a node listing five NSGs besides the managed one",
    base: cloudCluster,
    broken: (v) => (v.nodes[3].oci.nsgIds = fiveNsgs),
    problems: [
      "nodes[3].oci.nsgIds: oci-1's VNIC would be in 6 network security groups (5 listed and the cluster's 1), over OCI's limit of 5. List at most 4, or set oci.manageNsgs: false",
    ],
    valid: (v) => {
      v.nodes[3].oci.nsgIds = fiveNsgs;
      v.oci.manageNsgs = false;
    },
  },
  {
    rule: "default NSGs that leave no room for the managed ones",
    base: cloudCluster,
    broken: (v) => (v.oci.nsgIds = fiveNsgs),
    problems: [
      "oci.nsgIds: the VNICs of oci-1, oci-2, oci-3 would be in up to 6 network security groups (5 listed and the cluster's managed ones), over OCI's limit of 5. List at most 4, or set oci.manageNsgs: false",
    ],
    valid: (v) => (v.oci.nsgIds = fiveNsgs.slice(0, 4)),
  },
  {
    rule: "six NSGs even without managed ones",
    base: cloudCluster,
    broken: (v) => {
      v.oci.manageNsgs = false;
      v.nodes[3].oci.nsgIds = [...fiveNsgs, "ocid1.networksecuritygroup.oc1..nsg6"];
    },
    problems: [
      "nodes[3].oci.nsgIds: oci-1's VNIC would be in 6 network security groups (6 listed), over OCI's limit of 5. List at most 5",
    ],
  },
];

describe("rules: oci", () => {
  itRefuses(cases);
});
