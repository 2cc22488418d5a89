import { CfnOutput, CrossStackReferences, Duration, Fn, ReferenceStrength, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  AuthorizationType,
  EndpointType,
  LambdaIntegration,
  LogGroupLogDestination,
  ResponseTransferMode,
  ResponseType,
  RestApi,
  type IResource,
  type Method,
} from 'aws-cdk-lib/aws-apigateway';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { FilterPattern, LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { TableName } from '../../functions/shared/tables';
import { ENDPOINT_GROUPS, FALLBACK_GROUP, type EndpointGroup } from '../endpoint-groups';
import { ConsoleSso, type SsoOption } from './console-sso';
import { accessFor, FILES_KEY_ACTIONS, FILES_OBJECT_ACTIONS } from './access';
import { EndpointFunction } from './endpoint-function';
import { filesBucketArnExport } from './files-bucket';
import { ManagedCapacity } from './managed-capacity';
import type { CapacityMode, ManagedInstancesOptions } from './options';
import { FunctionUrlFrontDoor, type FrontDoor } from './front-door';
import { acknowledge } from './nag';
import { pascal } from './names';

export interface ApiStackProps extends StackProps {
  stage: string;
  /** The functions' CORS_ALLOWED_ORIGINS when not the default (any origin); '' for none. */
  corsOrigins?: string;
  memorySize: number;
  /** Per-group memory (MB) of on-demand functions, overriding `memorySize`. */
  memorySizes?: Readonly<Record<string, number>>;
  /** Per-group reserved concurrency of on-demand functions. */
  reservedConcurrency?: Readonly<Record<string, number>>;
  /** Default on-demand; `managed-instances` needs `managedInstances`. */
  capacity?: CapacityMode;
  managedInstances?: ManagedInstancesOptions;
  logRetentionDays: RetentionDays;
  tables: Readonly<Record<TableName, Table>>;
  providerCredentialsKey: IKey;
  /** The Files API's bucket and its key (data stack), for the groups whose access names it. */
  files: { bucket: IBucket; key: IKey };
  /** Default: infra/endpoint-groups.ts, the same list the local runtime routes from. */
  groups?: readonly EndpointGroup[];
  /** Single sign-on to the console: a Cognito user pool made here, or another issuer. */
  sso?: SsoOption;
  /** Default `api-gateway` (the REST API); `function-url`: each group's function URL (front-door.ts). */
  frontDoor?: FrontDoor;
  /** `function-url` only: CloudFront in front, with this CLOUDFRONT-scope web ACL. */
  cdn?: { webAclArn: string };
}

/**
 * Objects of the files bucket and its key. The object ARN is a wildcard by nature: keys are
 * `<workspace>/<file id>`, created per upload, and the function scopes every key to the
 * caller's workspace itself.
 */
export function grantFiles(fn: Pick<EndpointFunction, 'role' | 'function'>, files: ApiStackProps['files'], stage: string): void {
  const bucketArn = Fn.importValue(filesBucketArnExport(stage));
  fn.role.addToPrincipalPolicy(new PolicyStatement({ sid: 'FilesObjects', actions: [...FILES_OBJECT_ACTIONS], resources: [`${bucketArn}/*`] }));
  Validations.of(fn.role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::${filesBucketArnExport(stage)}/*]`,
    reason:
      'File objects are keyed <workspace>/<file id> and created per upload or per batch output, so no fixed ARN list exists; the function scopes every key to the workspace it acts for.',
  });
  fn.role.addToPrincipalPolicy(new PolicyStatement({ sid: 'FilesKey', actions: [...FILES_KEY_ACTIONS], resources: [files.key.keyArn] }));
  fn.function.addEnvironment('FILES_BUCKET', files.bucket.bucketName);
}

/** Default stage throttling (all methods); per-key limits are the gateway's own policies. */
export const STAGE_THROTTLING = { rateLimit: 1000, burstLimit: 2000 } as const;

/**
 * The custom metric counting requests API Gateway itself throttled (stage or account limit;
 * the 429 the THROTTLED gateway response gives), from the access log: API Gateway publishes
 * no throttle metric of its own. The observability stack alarms on it.
 */
export const apiThrottledMetric = (stage: string) => ({ namespace: `AiGateway/${stage}`, metricName: 'ApiThrottled' }) as const;

export interface ApiRoute {
  /** Resource path, e.g. `/v1/prompts/{proxy+}`. */
  path: string;
  group: string;
  method: Method;
}

/** API Gateway's own errors (throttling, oversize bodies, timeouts) in the OpenAI error shape. */
const GATEWAY_ERRORS: ReadonlyArray<{
  id: string;
  type: ResponseType;
  status?: string;
  errorType: string;
  code?: string;
  message?: string;
  /** Tells the OpenAI and Anthropic SDKs whether to retry (they honour `x-should-retry`). */
  retry?: boolean;
}> = [
  { id: 'Default4xx', type: ResponseType.DEFAULT_4XX, errorType: 'invalid_request_error' },
  { id: 'Default5xx', type: ResponseType.DEFAULT_5XX, errorType: 'server_error' },
  { id: 'Throttled', type: ResponseType.THROTTLED, status: '429', errorType: 'rate_limit_error', retry: true },
  // The code the functions (and the local runtime) give the same refusal.
  { id: 'RequestTooLarge', type: ResponseType.REQUEST_TOO_LARGE, status: '413', errorType: 'invalid_request_error', code: 'payload_too_large' },
  { id: 'IntegrationTimeout', type: ResponseType.INTEGRATION_TIMEOUT, status: '504', errorType: 'timeout_error' },
  // Only reachable for paths outside every resource, which the catch-all routes make rare.
  { id: 'UnknownRoute', type: ResponseType.MISSING_AUTHENTICATION_TOKEN, status: '404', errorType: 'not_found_error', message: '"Unknown route."' },
];

/**
 * The public HTTPS endpoint: one REST API (Regional; REST is the only API Gateway flavour
 * that streams responses), one response-streaming Lambda per endpoint group, and the route
 * table of infra/endpoint-groups.ts: `/v1/<prefix>` and `/v1/<prefix>/{proxy+}` go to
 * the group that owns the prefix; everything else (`/`, `/{proxy+}`, `/v1`,
 * `/v1/{proxy+}`) goes to the gateway group, so unknown paths get the gateway's JSON 404.
 */
export class ApiStack extends Stack {
  /** The REST API of the `api-gateway` front door. */
  readonly restApi?: RestApi;
  /** The function URLs (and CloudFront) of the `function-url` front door. */
  readonly functionUrls?: FunctionUrlFrontDoor;
  readonly functions: Readonly<Record<string, EndpointFunction>>;
  readonly routes: readonly ApiRoute[];
  /** Only in `managed-instances` mode. */
  readonly managedCapacity?: ManagedCapacity;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);
    // Table names and the key ARN arrive as CloudFormation exports (strong references, set
    // explicitly): the data stack cannot be deleted while this stack still uses them.
    CrossStackReferences.of(this).consume(ReferenceStrength.STRONG);
    const groups = props.groups ?? ENDPOINT_GROUPS;
    const known = new Set(groups.map((g) => g.name));
    for (const name of Object.keys(props.memorySizes ?? {})) {
      if (!known.has(name)) throw new Error(`Context 'memorySizes' names '${name}', which is not an endpoint group (${[...known].join(', ')}).`);
    }
    const managed = props.capacity === 'managed-instances' ? props.managedInstances : undefined;
    if (props.capacity === 'managed-instances' && !managed) throw new Error(`capacity 'managed-instances' needs its managedInstances settings.`);
    for (const name of Object.keys(props.reservedConcurrency ?? {})) {
      if (!known.has(name)) throw new Error(`Context 'reservedConcurrency' names '${name}', which is not an endpoint group (${[...known].join(', ')}).`);
      if (managed?.groups.includes(name)) {
        throw new Error(
          `Context 'reservedConcurrency' names '${name}', which runs on Managed Instances: its concurrency is set by its execution environments instead.`,
        );
      }
    }
    for (const name of managed?.groups ?? []) {
      if (!known.has(name)) throw new Error(`Context 'managedInstanceGroups' names '${name}', which is not an endpoint group (${[...known].join(', ')}).`);
    }
    if (managed) {
      this.managedCapacity = new ManagedCapacity(this, 'ManagedCapacity', {
        stage: props.stage,
        settings: managed,
        logRetentionDays: props.logRetentionDays,
      });
    }

    const restApi = props.frontDoor === 'function-url' ? undefined : this.createRestApi(props);
    this.restApi = restApi;

    const functions: Record<string, EndpointFunction> = {};
    const routes: ApiRoute[] = [];
    const route = (resource: IResource, group: string, integration: LambdaIntegration) => {
      const method = resource.addMethod('ANY', integration, { authorizationType: AuthorizationType.NONE });
      acknowledge(method, 'AwsSolutions-APIG4', 'AwsSolutions-COG4');
      routes.push({ path: resource.path, group, method });
    };

    const v1 = restApi?.root.addResource('v1');
    const unownedParents: IResource[] = [];
    let fallbackIntegration: LambdaIntegration | undefined;
    for (const group of groups) {
      const onManagedInstances = managed?.groups.includes(group.name) ?? false;
      const fn = new EndpointFunction(this, `${pascal(group.name)}Function`, {
        group,
        stage: props.stage,
        memorySize: onManagedInstances ? managed!.memorySize : (props.memorySizes?.[group.name] ?? props.memorySize),
        managedInstances: onManagedInstances,
        logRetentionDays: props.logRetentionDays,
        tables: props.tables,
        providerCredentialsKey: props.providerCredentialsKey,
      });
      functions[group.name] = fn;
      const reserved = props.reservedConcurrency?.[group.name];
      if (reserved !== undefined) (fn.function.node.defaultChild as CfnFunction).reservedConcurrentExecutions = reserved;
      if (accessFor(group.name).filesBucket) grantFiles(fn, props.files, props.stage);
      if (onManagedInstances) this.managedCapacity!.attach(fn.function);
      if (!restApi || !v1) continue;
      const integration = new LambdaIntegration(fn.function, {
        responseTransferMode: ResponseTransferMode.STREAM,
        timeout: Duration.minutes(15),
        // One invoke permission per method, scoped to it; no console test-invoke permissions.
        allowTestInvoke: false,
      });
      for (const prefix of group.prefixes) {
        const parts = prefix.split('/');
        let parent: IResource = v1;
        for (const part of parts.slice(0, -1)) {
          // A nested prefix's parent (`/v1/messages` of `messages/batches`) stays the fallback group's.
          const existing = parent.getResource(part);
          if (!existing) unownedParents.push((parent = parent.addResource(part)));
          else parent = existing;
        }
        const resource = parent.addResource(parts.at(-1)!);
        route(resource, group.name, integration);
        route(resource.addResource('{proxy+}'), group.name, integration);
      }
      for (const root of group.roots ?? []) {
        const resource = restApi.root.addResource(root);
        route(resource, group.name, integration);
        route(resource.addResource('{proxy+}'), group.name, integration);
      }
      if (group.name === FALLBACK_GROUP) {
        route(restApi.root, group.name, integration);
        route(restApi.root.addResource('{proxy+}'), group.name, integration);
        route(v1, group.name, integration);
        route(v1.addResource('{proxy+}'), group.name, integration);
        fallbackIntegration = integration;
      }
    }
    if (!functions[FALLBACK_GROUP]) throw new Error(`The endpoint groups must include the fallback group '${FALLBACK_GROUP}'.`);
    for (const resource of unownedParents) {
      route(resource, FALLBACK_GROUP, fallbackIntegration!);
      route(resource.addResource('{proxy+}'), FALLBACK_GROUP, fallbackIntegration!);
    }
    if (props.sso && functions.admin) {
      if (!restApi) throw new Error('Console single sign-on needs the API Gateway front door (its callback URL is fixed at deploy time).');
      // Built from the API id and the stage name, not restApi.url: that names the stage
      // resource, which depends on the methods, which depend on this function.
      const callbackUrl = `https://${restApi.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${props.stage}/console/sso/callback`;
      const sso = new ConsoleSso(this, 'ConsoleSso', { option: props.sso, stage: props.stage, callbackUrl });
      for (const [name, value] of Object.entries(sso.environment)) functions.admin.function.addEnvironment(name, value);
      sso.grantClientSecret(functions.admin.function);
    }
    if (props.corsOrigins !== undefined) {
      for (const fn of Object.values(functions)) fn.function.addEnvironment('CORS_ALLOWED_ORIGINS', props.corsOrigins);
    }
    this.functions = functions;
    this.routes = routes;

    if (!restApi) {
      this.functionUrls = new FunctionUrlFrontDoor(this, 'FrontDoor', {
        stage: props.stage,
        groups,
        functions,
        ...(props.cdn ? { cdn: { webAclArn: props.cdn.webAclArn, logRetentionDays: props.logRetentionDays } } : {}),
      });
    }
    new CfnOutput(this, 'BaseUrl', {
      value: restApi ? `${restApi.url}v1` : this.functionUrls!.baseUrl,
      description: 'OpenAI-compatible base URL (what an OpenAI SDK takes as baseURL)',
    });
  }

  /** The `api-gateway` front door: the REST API, its access log and throttle metric, and its own errors in the OpenAI shape. */
  private createRestApi(props: ApiStackProps): RestApi {
    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: props.logRetentionDays });
    const throttled = apiThrottledMetric(props.stage);
    accessLogs.addMetricFilter('ThrottledRequests', {
      metricNamespace: throttled.namespace,
      metricName: throttled.metricName,
      filterPattern: FilterPattern.stringValue('$.errorType', '=', 'THROTTLED'),
      metricValue: '1',
      defaultValue: 0,
    });
    const restApi = new RestApi(this, 'Api', {
      restApiName: `ai-gateway-${props.stage}`,
      description: `AI gateway (${props.stage}): OpenAI-compatible endpoint in front of every model provider`,
      endpointConfiguration: { types: [EndpointType.REGIONAL] },
      // Every body reaches the functions base64-encoded, byte for byte (multipart audio,
      // images, any provider payload); functions decode it (see infra/local/server.ts).
      binaryMediaTypes: ['*/*'],
      // The account-level CloudWatch role is a regional singleton; see the APIG6 acknowledgement.
      cloudWatchRole: false,
      failOnWarnings: true,
      deployOptions: {
        stageName: props.stage,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.custom(
          JSON.stringify({
            requestId: AccessLogField.contextRequestId(),
            extendedRequestId: AccessLogField.contextExtendedRequestId(),
            requestTime: AccessLogField.contextRequestTimeEpoch(),
            ip: AccessLogField.contextIdentitySourceIp(),
            userAgent: AccessLogField.contextIdentityUserAgent(),
            method: AccessLogField.contextHttpMethod(),
            path: AccessLogField.contextPath(),
            resourcePath: AccessLogField.contextResourcePath(),
            protocol: AccessLogField.contextProtocol(),
            status: AccessLogField.contextStatus(),
            responseLength: AccessLogField.contextResponseLength(),
            responseLatency: AccessLogField.contextResponseLatency(),
            integrationStatus: AccessLogField.contextIntegrationStatus(),
            integrationLatency: AccessLogField.contextIntegrationLatency(),
            integrationError: AccessLogField.contextIntegrationErrorMessage(),
            error: AccessLogField.contextErrorMessage(),
            errorType: AccessLogField.contextErrorResponseType(),
          }),
        ),
        throttlingRateLimit: STAGE_THROTTLING.rateLimit,
        throttlingBurstLimit: STAGE_THROTTLING.burstLimit,
      },
    });
    acknowledge(restApi, 'AwsSolutions-APIG2');
    acknowledge(restApi.deploymentStage, 'AwsSolutions-APIG3', 'AwsSolutions-APIG6');

    // API Gateway's own refusals (throttling, size) readable by pages of any origin when the
    // functions allow any (functions/shared/http/cors.ts); they carry no data.
    const anyOrigin: Record<string, string> = props.corsOrigins === undefined ? { 'Access-Control-Allow-Origin': "'*'" } : {};
    for (const e of GATEWAY_ERRORS) {
      const responseHeaders: Record<string, string> = { ...anyOrigin, ...(e.retry !== undefined ? { 'x-should-retry': `'${e.retry}'` } : {}) };
      restApi.addGatewayResponse(e.id, {
        type: e.type,
        ...(e.status ? { statusCode: e.status } : {}),
        ...(Object.keys(responseHeaders).length ? { responseHeaders } : {}),
        templates: {
          'application/json': `{"error":{"message":${e.message ?? '$context.error.messageString'},"type":"${e.errorType}","param":null,"code":${e.code ? `"${e.code}"` : 'null'}}}`,
        },
      });
    }

    return restApi;
  }
}
