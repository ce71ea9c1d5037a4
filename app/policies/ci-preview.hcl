# Pull-request previews: read what the app layer manages, change nothing.
path "sys/policies/acl/*" {
  capabilities = ["read", "list"]
}

path "sys/auth" {
  capabilities = ["read"]
}

path "sys/mounts" {
  capabilities = ["read"]
}

path "auth/+/role/*" {
  capabilities = ["read", "list"]
}

path "auth/+/config" {
  capabilities = ["read"]
}
