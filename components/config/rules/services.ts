// The foundation services around the cluster: GCP for OpenBao's unseal key and for DNS; DNS records
// in the zone, of the right family, neither repeated nor the endpoint's own; the Flux repository's
// branch, path, known_hosts and deploy key; the unseal key's identity and rotation within Cloud KMS'
// bounds.
import { createHmac } from "node:crypto";
import { fqdn, inZone, ipFamily } from "../../net";
import { recordType } from "../derived";
import { checkUrlCredential } from "./credentials";
import type { Rule } from "./rule";

/** Services have what they need: GCP, names in the DNS zone, what Flux reads an ssh:// repository with. */
export const services: Rule = (
  { servicesGiven, cluster, dns, flux, secretKeys, presentKeys },
  problems,
) => {
  for (const key of ["openbao", "dns"]) {
    if (servicesGiven.has(key) && !servicesGiven.has("gcp")) {
      problems.add([key], "needs talos-platform:gcp", { hint: "Add gcp.project and gcp.region" });
    }
  }
  if (
    dns &&
    cluster?.endpoint &&
    ipFamily(cluster.endpoint) === undefined &&
    !inZone(cluster.endpoint, dns.domain)
  ) {
    problems.add(
      ["cluster", "endpoint"],
      `is not in dns.domain ${fqdn(dns.domain)}, so its record cannot be created there`,
      {
        got: cluster.endpoint,
        hint: "Use a name in the zone, or leave talos-platform:dns out and manage the record elsewhere",
      },
    );
  }
  dns?.records?.forEach((record, i) => {
    if (!inZone(record.name, dns.domain)) {
      problems.add(["dns", "records", i, "name"], `is not in dns.domain ${fqdn(dns.domain)}`, {
        got: record.name,
      });
    }
    // An untyped record takes its type from its first value (normalize.ts: recordType).
    const type = recordType(record);
    const family = type === "AAAA" ? 6 : type === "A" ? 4 : undefined;
    record.values.forEach((value, j) => {
      if (family !== undefined && ipFamily(value) !== family) {
        problems.add(
          ["dns", "records", i, "values", j],
          record.type === undefined
            ? `is not an IPv${family} address, and the record has no type, so its first value makes it an ${type} record`
            : `is not an IPv${family} address`,
          {
            got: value,
            hint:
              record.type === undefined
                ? "Put IPv4 and IPv6 values in two records (type A and type AAAA)"
                : `List only IPv${family} addresses in an ${type} record`,
          },
        );
      }
    });
  });
  if (flux && flux.repository.startsWith("ssh://")) {
    if (!flux.knownHosts) {
      problems.add(["flux", "knownHosts"], "required for an ssh:// repository", {
        hint: "Give the Git server's known_hosts line, e.g. from `ssh-keyscan github.com`",
      });
    }
    // Present in plain text is reported as such, once.
    if (!secretKeys.has("fluxDeployKey") && !presentKeys.has("fluxDeployKey")) {
      problems.add(["fluxDeployKey"], "required for an ssh:// repository, as a secret", {
        hint: "Run `pulumi config set --secret fluxDeployKey < deploy_key` (the key file on standard input, not on the command line), or let the CLI resolve it (docs/credentials.md)",
      });
    }
  }
};

/** The unseal key's identity has what its kind needs, and nothing another kind uses. */
export const openbaoCredentials: Rule = (input, problems) => {
  const openbao = input.openbao;
  if (!openbao) return;
  const mode = openbao.credentials ?? "serviceAccountKey";
  if (mode === "existingKey") {
    if (!openbao.serviceAccountEmail) {
      problems.add(
        ["openbao", "serviceAccountEmail"],
        "required when openbao.credentials is existingKey",
        {
          hint: "The service account whose key the gcpUnsealCredentials credential holds; the program grants it the unseal roles",
        },
      );
    }
    if (!input.secretKeys.has("gcpUnsealCredentials")) {
      problems.add(
        ["gcpUnsealCredentials"],
        "required as a secret when openbao.credentials is existingKey",
        {
          hint: "Let the CLI resolve it (Bitwarden gcp-unseal-credentials, or GCP_UNSEAL_CREDENTIALS): the key file's JSON",
        },
      );
    }
  } else if (openbao.serviceAccountEmail) {
    problems.add(["openbao", "serviceAccountEmail"], `is only used with credentials: existingKey`, {
      got: openbao.serviceAccountEmail,
    });
  }
  if (mode !== "workloadIdentity" && openbao.kubernetesServiceAccount) {
    problems.add(
      ["openbao", "kubernetesServiceAccount"],
      "is only used with credentials: workloadIdentity",
    );
  }
};

/** Why `branch` is not a valid Git branch name (git check-ref-format --branch), or undefined. */
function gitBranchProblem(branch: string): string | undefined {
  if (branch.startsWith("-")) return "starts with -";
  if (branch === "@") return "is @";
  // Control characters, space and the characters Git reserves.
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(branch))
    return "contains a space, a control character or one of ~ ^ : ? * [ \\";
  if (branch.includes("..")) return "contains ..";
  if (branch.includes("@{")) return "contains @{";
  if (branch.includes("//")) return "contains //";
  if (branch.startsWith("/") || branch.endsWith("/")) return "starts or ends with /";
  if (branch.endsWith(".")) return "ends with .";
  for (const component of branch.split("/")) {
    if (component.startsWith(".")) return `has a part starting with . (${component})`;
    if (component.endsWith(".lock")) return `has a part ending in .lock (${component})`;
  }
  return undefined;
}

/** Why `folder` is not a folder inside the repository, or undefined. */
function repositoryPathProblem(folder: string): string | undefined {
  if (folder.startsWith("/"))
    return "is absolute; Flux takes a folder relative to the repository root";
  if (folder.includes("\\")) return "uses \\; write folders with /";
  let depth = 0;
  for (const part of folder.split("/")) {
    if (part === "..") depth -= 1;
    else if (part !== "." && part !== "") depth += 1;
    if (depth < 0) return "leads out of the repository (..)";
  }
  return undefined;
}

/** SSH key types a known_hosts line may name. */
const KEY_TYPES = [
  "ssh-ed25519",
  "ssh-rsa",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "sk-ssh-ed25519@openssh.com",
  "sk-ecdsa-sha2-nistp256@openssh.com",
];

/** A parsed known_hosts line. */
interface KnownHost {
  readonly patterns: readonly string[];
  readonly marker?: string;
}

/** Parses one known_hosts line; a string says what is wrong with it. */
function parseKnownHostsLine(line: string): KnownHost | string {
  const fields = line.trim().split(/\s+/);
  const marker = fields[0]?.startsWith("@") ? fields.shift() : undefined;
  if (marker !== undefined && marker !== "@cert-authority" && marker !== "@revoked") {
    return `has an unknown marker ${marker}`;
  }
  if (fields.length < 3) return "needs host names, a key type and a base64 key";
  const [hosts, type, key] = fields;
  if (!KEY_TYPES.includes(type)) return `names an unknown key type ${type}`;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(key)) return "has a key that is not base64";
  // The key blob starts with its own type as an SSH string: uint32 length, then the name.
  const blob = Buffer.from(key, "base64");
  const length = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
  if (length !== type.length || blob.subarray(4, 4 + length).toString() !== type) {
    return `has a key that is not an ${type} key`;
  }
  return { patterns: hosts.split(","), marker };
}

/** `host` or `[host]:port`, as known_hosts names a server. */
function hostEntry(host: string, port: string): string {
  return port && port !== "22" ? `[${host}]:${port}` : host;
}

/** Whether a known_hosts host pattern (plain, wildcard or hashed `|1|salt|hash`) matches `entry`. */
function knownHostMatches(pattern: string, entry: string): boolean {
  const hashed = /^\|1\|([^|]+)\|([^|]+)$/.exec(pattern);
  if (hashed) {
    const digest = createHmac("sha1", Buffer.from(hashed[1], "base64"))
      .update(entry)
      .digest("base64");
    return digest === hashed[2];
  }
  const regex = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
    "i",
  );
  return regex.test(entry);
}

/** Flux's repository: a valid branch, a folder inside the repository, known_hosts Flux can use. */
export const fluxSettings: Rule = ({ flux }, problems) => {
  if (!flux) return;
  const branchProblem = flux.branch === undefined ? undefined : gitBranchProblem(flux.branch);
  if (branchProblem) {
    problems.add(["flux", "branch"], `is not a valid Git branch name: it ${branchProblem}`, {
      got: flux.branch,
    });
  }
  const pathProblem = repositoryPathProblem(flux.path);
  if (pathProblem) problems.add(["flux", "path"], pathProblem, { got: flux.path });
  checkUrlCredential(
    ["flux", "repository"],
    flux.repository,
    "Use an ssh:// URL with the fluxDeployKey secret (docs/credentials.md), or a public https:// URL",
    problems,
  );
  if (flux.knownHosts === undefined) return;
  const lines = flux.knownHosts
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.trim().startsWith("#"));
  const parsed: KnownHost[] = [];
  lines.forEach((line, i) => {
    const result = parseKnownHostsLine(line);
    if (typeof result === "string") {
      problems.add(
        ["flux", "knownHosts"],
        `line ${i + 1} is not a known_hosts line: it ${result}`,
        {
          hint: "Write `host key-type base64-key`, e.g. the output of `ssh-keyscan github.com`",
        },
      );
    } else {
      parsed.push(result);
    }
  });
  if (parsed.length !== lines.length || !flux.repository.startsWith("ssh://")) return;
  const url = new URL(flux.repository);
  const entry = hostEntry(url.hostname.replace(/^\[|\]$/g, ""), url.port);
  const covered = parsed.some(
    (line) =>
      line.marker !== "@revoked" &&
      line.patterns.some((p) => !p.startsWith("!") && knownHostMatches(p, entry)) &&
      !line.patterns.some((p) => p.startsWith("!") && knownHostMatches(p.slice(1), entry)),
  );
  if (!covered) {
    problems.add(["flux", "knownHosts"], `has no line for ${entry}, the repository's host`, {
      hint: `Add the output of \`ssh-keyscan ${url.port && url.port !== "22" ? `-p ${url.port} ` : ""}${url.hostname}\``,
    });
  }
};

/** DNS records: one per name and type, none for the endpoint's name (the program creates that one). */
export const dnsRecords: Rule = ({ dns, cluster }, problems) => {
  if (!dns?.records) return;
  const endpoint =
    cluster?.endpoint && ipFamily(cluster.endpoint) === undefined
      ? fqdn(cluster.endpoint).toLowerCase()
      : undefined;
  const seen = new Map<string, number>();
  dns.records.forEach((record, i) => {
    const name = fqdn(record.name).toLowerCase();
    if (name === endpoint) {
      problems.add(
        ["dns", "records", i, "name"],
        "is the API endpoint's name, whose record the program creates itself",
        {
          got: record.name,
          hint: "Leave it out: cluster.endpoint already gets its record",
        },
      );
      return;
    }
    // The type the record gets (an untyped one: its first value's family), as Cloud DNS sees it.
    const type = recordType(record);
    const first = seen.get(`${name}|${type}`);
    if (first !== undefined) {
      problems.add(
        ["dns", "records", i, "name"],
        `repeats dns.records[${first}] (same name and type ${type}); Cloud DNS takes one record set per name and type`,
        {
          got: record.name,
          hint: "List every value of a name and type in one record",
        },
      );
    } else {
      seen.set(`${name}|${type}`, i);
    }
  });
};

/** Cloud KMS' bounds on automatic rotation: at least 24 hours, at most 876,000 hours. */
const KMS_ROTATION_SECONDS = { min: 24 * 3600, max: 876_000 * 3600 } as const;

/** The OpenBao unseal key's rotation period is one Cloud KMS accepts. */
export const openbaoRotation: Rule = ({ openbao }, problems) => {
  const period = openbao?.rotationPeriod;
  const match = period === undefined ? null : /^(\d+)s$/.exec(period);
  if (!match) return;
  const seconds = Number(match[1]);
  if (seconds < KMS_ROTATION_SECONDS.min || seconds > KMS_ROTATION_SECONDS.max) {
    problems.add(
      ["openbao", "rotationPeriod"],
      seconds < KMS_ROTATION_SECONDS.min
        ? "is shorter than one day, Cloud KMS' shortest rotation period"
        : "is longer than 876,000 hours, Cloud KMS' longest rotation period",
      {
        got: period,
        hint: "Use 86400s (one day) to 3153600000s; the default is 7776000s (90 days)",
      },
    );
  }
};
