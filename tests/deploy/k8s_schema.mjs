// Validates Kubernetes manifests against the API's schemas, offline, with npm's
// kubernetes-models: every document of every file given must be a known kind of the API and pass
// its schema. Prints one line per document; exits 1 on the first file with an invalid one.
// Usage (from a directory whose node_modules holds kubernetes-models and yaml):
//   node k8s_schema.mjs FILE.yaml...
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import * as models from "kubernetes-models";

// "apps/v1" -> models.apps.v1, "v1" -> models.v1, "policy/v1" -> models.policy.v1; dotted
// groups are camel-cased ("networking.k8s.io" -> networkingK8sIo).
function modelClass(apiVersion, kind) {
  const parts = apiVersion.split("/");
  const [group, version] = parts.length === 1 ? [null, parts[0]] : parts;
  const groupModule =
    group === null
      ? models
      : models[group.replace(/\.(\w)/g, (_, c) => c.toUpperCase())];
  const versionModule = group === null ? models[version] : groupModule?.[version];
  return versionModule?.[kind];
}

let failed = false;
for (const file of process.argv.slice(2)) {
  for (const document of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (document.errors.length > 0) {
      console.log(`${file}: YAML error: ${document.errors[0].message}`);
      failed = true;
      continue;
    }
    const object = document.toJS();
    if (object === null) continue;
    const Model = modelClass(object.apiVersion ?? "", object.kind ?? "");
    const name = `${file}: ${object.apiVersion} ${object.kind} ${object.metadata?.name}`;
    if (!Model) {
      console.log(`${name}: not a kind of the Kubernetes API`);
      failed = true;
      continue;
    }
    try {
      new Model(object).validate();
      console.log(`${name}: valid`);
    } catch (error) {
      console.log(`${name}: ${error.message}`);
      failed = true;
    }
  }
}
process.exit(failed ? 1 : 0);
