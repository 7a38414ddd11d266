/**
 * Validates rendered Kubernetes objects against the API's JSON schemas, offline: the
 * `kubernetes-models` packages ship the Kubernetes OpenAPI schemas (and KEDA's and
 * prometheus-operator's CRD schemas) compiled to validators. They check types, required
 * fields, enums and formats; like the API server's schemas they allow fields they do not
 * know, so the chart test asserts the fields that matter by name as well.
 */
import { ConfigMap, Pod, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';

interface Validatable {
  validate(): void;
}

/** Every kind the chart may render, by `apiVersion/kind`; anything else is refused. */
const MODELS: Record<string, new (data: never) => Validatable> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Pod': Pod,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'batch/v1/Job': Job,
  'networking.k8s.io/v1/Ingress': Ingress,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

export interface KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** Throws, naming the object and the failing paths, unless `object` matches its kind's schema. */
export function validateKubernetesObject(object: KubernetesObject): void {
  const key = `${object.apiVersion}/${object.kind}`;
  const Model = MODELS[key];
  if (!Model) throw new Error(`no schema for ${key} (${object.metadata?.name ?? 'unnamed'})`);
  try {
    new Model(object as never).validate();
  } catch (err) {
    throw new Error(`${key} ${object.metadata?.name ?? 'unnamed'}: ${(err as Error).message}`);
  }
}
