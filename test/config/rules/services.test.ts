// components/config/rules/services.ts: GCP, DNS, Flux and OpenBao's unseal key.
import { GITHUB_KNOWN_HOSTS, itRefuses, RuleCase, withServices } from "../../fixtures";
import { itRefusesMutations } from "../arbitraryStack";

const cases: RuleCase[] = [
  {
    rule: "services without a GCP project",
    base: withServices,
    broken: (v) => delete v.gcp,
    problems: [
      "openbao: needs talos-platform:gcp. Add gcp.project and gcp.region",
      "dns: needs talos-platform:gcp. Add gcp.project and gcp.region",
    ],
    secrets: ["fluxDeployKey"],
  },
  {
    rule: "an endpoint outside the DNS zone",
    base: withServices,
    broken: (v) => (v.cluster.endpoint = "api.example.org"),
    problems: [
      'cluster.endpoint: is not in dns.domain example.net., so its record cannot be created there; got "api.example.org". Use a name in the zone, or leave talos-platform:dns out and manage the record elsewhere',
    ],
    secrets: ["fluxDeployKey"],
  },
  {
    rule: "a record outside the DNS zone",
    base: withServices,
    broken: (v) => (v.dns.records[0].name = "www.example.org"),
    problems: ['dns.records[0].name: is not in dns.domain example.net.; got "www.example.org"'],
    secrets: ["fluxDeployKey"],
  },
  {
    rule: "an A record with an IPv6 value",
    base: withServices,
    broken: (v) => {
      v.dns.records[0].type = "A";
      v.dns.records[0].values = ["2001:db8::60"];
    },
    problems: [
      'dns.records[0].values[0]: is not an IPv4 address; got "2001:db8::60". List only IPv4 addresses in an A record',
    ],
    // Untyped, an IPv6 value makes an AAAA record.
    valid: (v) => (v.dns.records[0].values = ["2001:db8::60"]),
    secrets: ["fluxDeployKey"],
  },
  {
    rule: "an untyped record mixing IPv4 and IPv6 values",
    base: withServices,
    broken: (v) => (v.dns.records[0].values = ["2001:db8::60", "192.0.2.60"]),
    problems: [
      'dns.records[0].values[1]: is not an IPv6 address, and the record has no type, so its first value makes it an AAAA record; got "192.0.2.60". Put IPv4 and IPv6 values in two records (type A and type AAAA)',
    ],
    valid: (v) => v.dns.records.push({ name: "*.apps.demo.example.net", values: ["2001:db8::60"] }),
    secrets: ["fluxDeployKey"],
  },
  {
    rule: "a typed A record and an untyped IPv4 record of one name",
    base: withServices,
    broken: (v) =>
      v.dns.records.push({ name: "*.apps.demo.example.net", type: "A", values: ["192.0.2.61"] }),
    problems: [
      'dns.records[1].name: repeats dns.records[0] (same name and type A); Cloud DNS takes one record set per name and type; got "*.apps.demo.example.net". List every value of a name and type in one record',
    ],
    valid: (v) =>
      v.dns.records.push({
        name: "*.apps.demo.example.net",
        type: "AAAA",
        values: ["2001:db8::61"],
      }),
    secrets: ["fluxDeployKey"],
  },
  {
    rule: "an IPv6 endpoint with DNS records (an IP literal needs no record)",
    base: withServices,
    broken: (v) => (v.cluster.endpoint = "api.example.org"),
    problems: [
      'cluster.endpoint: is not in dns.domain example.net., so its record cannot be created there; got "api.example.org". Use a name in the zone, or leave talos-platform:dns out and manage the record elsewhere',
    ],
    valid: (v) => {
      v.cluster.network.serviceSubnets = ["fd00:96::/112"];
      v.cluster.network.podSubnets = ["fd00:244::/56"];
      v.nodes.forEach((node: any, i: number) => {
        node.network.addresses = [`2001:db8::1${i + 1}/64`];
        node.network.gateway6 = "2001:db8::1";
        delete node.network.gateway;
      });
      v.cluster.vip = "2001:db8::10";
      v.cluster.endpoint = "2001:db8::10";
    },
    secrets: ["fluxDeployKey"],
  },
  {
    rule: "an ssh repository without known hosts",
    base: withServices,
    broken: (v) => delete v.flux.knownHosts,
    problems: [
      "flux.knownHosts: required for an ssh:// repository. Give the Git server's known_hosts line, e.g. from `ssh-keyscan github.com`",
    ],
    secrets: ["fluxDeployKey"],
  },
  {
    rule: "a Flux repository URL with a token inside",
    base: withServices,
    secrets: ["fluxDeployKey"],
    broken: (v) =>
      (v.flux.repository = "https://x-access-token:FAKE-SECRET-ghp@github.com/example/homelab.git"),
    problems: [
      'flux.repository: carries a credential (a user:password), which would be stored in plain text; got "https://***:***@github.com/example/homelab.git". Use an ssh:// URL with the fluxDeployKey secret (docs/credentials.md), or a public https:// URL',
    ],
    valid: (v) => (v.flux.repository = "https://github.com/example/homelab.git"),
  },
  {
    rule: "a Flux branch that is no Git ref and a path outside the repository",
    base: withServices,
    secrets: ["fluxDeployKey"],
    broken: (v) => {
      v.flux.branch = "release..1";
      v.flux.path = "clusters/../../elsewhere";
    },
    problems: [
      'flux.branch: is not a valid Git branch name: it contains ..; got "release..1"',
      'flux.path: leads out of the repository (..); got "clusters/../../elsewhere"',
    ],
    valid: (v) => {
      v.flux.branch = "release/1.0";
      v.flux.path = "./clusters/../clusters/demo";
    },
  },
  {
    rule: "known_hosts that do not parse, or miss the repository's host",
    base: withServices,
    secrets: ["fluxDeployKey"],
    broken: (v) => (v.flux.knownHosts = "github.com ssh-ed25519 AAAAexample"),
    problems: [
      "flux.knownHosts: line 1 is not a known_hosts line: it has a key that is not an ssh-ed25519 key. Write `host key-type base64-key`, e.g. the output of `ssh-keyscan github.com`",
    ],
    valid: (v) => (v.flux.knownHosts = `# GitHub\n${GITHUB_KNOWN_HOSTS}\n`),
  },
  {
    rule: "known_hosts without the repository's host",
    base: withServices,
    secrets: ["fluxDeployKey"],
    broken: (v) => (v.flux.repository = "ssh://git@git.example.net:2222/example/homelab.git"),
    problems: [
      "flux.knownHosts: has no line for [git.example.net]:2222, the repository's host. Add the output of `ssh-keyscan -p 2222 git.example.net`",
    ],
    valid: (v) => {
      v.flux.repository = "ssh://git@git.example.net:2222/example/homelab.git";
      v.flux.knownHosts = GITHUB_KNOWN_HOSTS.replace("github.com", "[git.example.net]:2222");
    },
  },
  {
    rule: "DNS records repeating each other or the endpoint's own name",
    base: withServices,
    secrets: ["fluxDeployKey"],
    broken: (v) =>
      v.dns.records.push(
        { name: "*.apps.demo.example.net.", values: ["192.0.2.61"] },
        { name: "api.demo.example.net", values: ["192.0.2.10"] },
      ),
    problems: [
      'dns.records[1].name: repeats dns.records[0] (same name and type A); Cloud DNS takes one record set per name and type; got "*.apps.demo.example.net.". List every value of a name and type in one record',
      'dns.records[2].name: is the API endpoint\'s name, whose record the program creates itself; got "api.demo.example.net". Leave it out: cluster.endpoint already gets its record',
    ],
    valid: (v) => v.dns.records[0].values.push("192.0.2.61"),
  },
  {
    rule: "an OpenBao key rotating more often than Cloud KMS allows",
    base: withServices,
    secrets: ["fluxDeployKey"],
    broken: (v) => (v.openbao.rotationPeriod = "3600s"),
    problems: [
      'openbao.rotationPeriod: is shorter than one day, Cloud KMS\' shortest rotation period; got "3600s". Use 86400s (one day) to 3153600000s; the default is 7776000s (90 days)',
    ],
    valid: (v) => (v.openbao.rotationPeriod = "86400s"),
  },
  {
    rule: "a KMS plugin without the binary's SHA-256 OpenBao checks",
    base: withServices,
    secrets: ["fluxDeployKey"],
    broken: (v) => (v.openbao.kmsPlugin = { version: "v0.1.0", sha256sum: "latest" }),
    problems: [
      'openbao.kmsPlugin.sha256sum: expected the binary\'s SHA-256: 64 hex digits; got "latest"',
    ],
    valid: (v) => (v.openbao.kmsPlugin = { version: "v0.1.0", sha256sum: "0".repeat(64) }),
  },
  {
    rule: "an ssh repository without its deploy key secret, naming the key",
    base: withServices,
    broken: () => undefined,
    problems: [
      "fluxDeployKey: required for an ssh:// repository, as a secret. Run `pulumi config set --secret fluxDeployKey < deploy_key` (the key file on standard input, not on the command line), or let the CLI resolve it (docs/credentials.md)",
    ],
    // A public https repository needs no deploy key.
    valid: (v) => {
      v.flux.repository = "https://github.com/example/homelab.git";
      delete v.flux.knownHosts;
    },
  },
  {
    rule: "an existing unseal key without its account or the credential",
    base: withServices,
    broken: (v) => (v.openbao.credentials = "existingKey"),
    problems: [
      "openbao.serviceAccountEmail: required when openbao.credentials is existingKey. The service account whose key the gcpUnsealCredentials credential holds; the program grants it the unseal roles",
      "gcpUnsealCredentials: required as a secret when openbao.credentials is existingKey. Let the CLI resolve it (Bitwarden gcp-unseal-credentials, or GCP_UNSEAL_CREDENTIALS): the key file's JSON",
    ],
    secrets: ["fluxDeployKey"],
  },
  {
    rule: "a Workload Identity pool ID GCP refuses",
    base: withServices,
    broken: (v) => (v.openbao.workloadIdentityPoolId = "gcp-openbao"),
    problems: [
      'openbao.workloadIdentityPoolId: expected 4 to 32 lowercase letters, digits and hyphens, not starting with gcp-; got "gcp-openbao"',
    ],
    valid: (v) => (v.openbao.workloadIdentityPoolId = "demo-openbao-2"),
    secrets: ["fluxDeployKey"],
  },
];

describe("rules: services", () => {
  itRefuses(cases);

  itRefusesMutations({
    "a Flux branch that is no Git ref": (v) => {
      if (!v.flux) return undefined;
      v.flux.branch = "a..b";
      return "flux.branch";
    },
    "a DNS record given twice": (v) => {
      if (!v.dns) return undefined;
      v.dns.records.push({ ...v.dns.records[0] });
      return "dns.records[1].name";
    },
    "an unseal key rotating every minute": (v) => {
      if (!v.openbao) return undefined;
      v.openbao.rotationPeriod = "60s";
      return "openbao.rotationPeriod";
    },
  });
});
