import type { CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { buildApp, DEFAULT_MANAGED_INSTANCES, optionsFromContext, resolveOptions, type GatewayAppOptions, type GatewayStacks } from '../../infra/stacks/index';
import { OPERATOR_POLICY } from '../../infra/stacks/managed-capacity';
import { testApp } from '../support/cdk-app';

// Capacity modes (issue 24): each mode synthesised once, with cdk-nag on; a finding makes
// app.synth() throw, which each mode's nag test reports.
type Json = Record<string, unknown>;
interface Synth {
  stacks: GatewayStacks;
  api: Template;
  workflows: Template;
  error?: Error;
}

const BASE = { stage: 'test', logRetentionDays: RetentionDays.TWO_WEEKS, memorySize: 1024 };
function synth(options: GatewayAppOptions): Synth {
  const app = testApp({ context: { 'aws:cdk:bundling-stacks': [] } });
  let stacks = buildApp(app, options);
  let error: Error | undefined;
  try {
    app.synth();
  } catch (err) {
    error = err as Error;
    stacks = buildApp(testApp({ context: { 'aws:cdk:bundling-stacks': [] } }), { ...options, nag: false });
  }
  return { stacks, api: Template.fromStack(stacks.api), workflows: Template.fromStack(stacks.workflows), ...(error ? { error } : {}) };
}

const logicalId = (stack: Stack, element: unknown) => stack.getLogicalId(element as CfnElement);
const functionProps = (s: Synth, group: string) => {
  const fn = s.stacks.api.functions[group]!.function;
  return s.api.findResources('AWS::Lambda::Function')[logicalId(s.stacks.api, fn.node.defaultChild)]!.Properties as Json;
};

let onDemand: Synth;
let managed: Synth;
let existingVpc: Synth;

beforeAll(() => {
  onDemand = synth({ ...BASE, ...resolveOptions({ ...BASE, memorySizes: 'policies:512,guardrails:256', reservedConcurrency: 'gateway:800,admin:20' }) });
  managed = synth(resolveOptions({ ...BASE, capacity: 'managed-instances', managedInstances: {} }));
  existingVpc = synth(
    resolveOptions({
      ...BASE,
      capacity: 'managed-instances',
      managedInstances: {
        vpcId: 'vpc-0123456789abcdef0',
        subnetIds: 'subnet-0123456789abcdef0,subnet-0123456789abcdef1,subnet-0123456789abcdef2',
        groups: 'gateway,prompts',
        instanceTypes: 'm7g.large',
        perExecutionEnvironmentMaxConcurrency: '256',
        minExecutionEnvironments: '3',
        maxExecutionEnvironments: '12',
        maxVCpuCount: '24',
      },
    }),
  );
}, 240_000);

describe('capacity options', () => {
  it('defaults to on-demand and reads the managed-instances settings from context strings', () => {
    expect(optionsFromContext(testApp()).capacity).toBe('on-demand');
    expect(optionsFromContext(testApp()).managedInstances).toBeUndefined();
    const ctx = testApp({
      context: {
        capacity: 'managed-instances',
        instanceTypes: 'c7g.large,c7g.2xlarge',
        perExecutionEnvironmentMaxConcurrency: '128',
        minExecutionEnvironments: '3',
        maxVCpuCount: '96',
        natGateways: '3',
        managedInstanceGroups: 'gateway,rerank',
        memorySizes: 'admin:512',
      },
    });
    const o = optionsFromContext(ctx);
    expect(o.capacity).toBe('managed-instances');
    expect(o.memorySizes).toEqual({ admin: 512 });
    expect(o.managedInstances).toEqual({
      ...DEFAULT_MANAGED_INSTANCES,
      groups: ['gateway', 'rerank'],
      instanceTypes: ['c7g.large', 'c7g.2xlarge'],
      perExecutionEnvironmentMaxConcurrency: 128,
      maxVCpuCount: 96,
      natGateways: 3,
    });
  });

  it('rejects settings Lambda or EC2 would refuse, naming the setting', () => {
    const mi = (managedInstances: Record<string, unknown>) => () => resolveOptions({ capacity: 'managed-instances', managedInstances });
    expect(() => resolveOptions({ capacity: 'provisioned' })).toThrow(/'capacity'/);
    expect(mi({ memorySize: '1024' })).toThrow(/'managedInstanceMemorySize'/);
    expect(mi({ memoryGiBPerVCpu: '1' })).toThrow(/'memoryGiBPerVCpu'/);
    expect(mi({ memorySize: '2048', memoryGiBPerVCpu: '4' })).toThrow(/at least one vCPU/);
    expect(mi({ perExecutionEnvironmentMaxConcurrency: '0' })).toThrow(/'perExecutionEnvironmentMaxConcurrency'/);
    expect(mi({ perExecutionEnvironmentMaxConcurrency: '1601' })).toThrow(/'perExecutionEnvironmentMaxConcurrency'/);
    expect(mi({ maxVCpuCount: '8' })).toThrow(/'maxVCpuCount'/);
    expect(mi({ instanceTypes: 'large' })).toThrow(/'instanceTypes'/);
    expect(mi({ vpcId: 'vpc-0123456789abcdef0' })).toThrow(/'subnetIds'/);
    expect(mi({ subnetIds: 'subnet-0123456789abcdef0' })).toThrow(/need 'vpcId'/);
    expect(mi({ natGateways: '4', maxAzs: '3' })).toThrow(/'natGateways'/);
    expect(mi({ minExecutionEnvironments: '5', maxExecutionEnvironments: '2' })).toThrow(/'maxExecutionEnvironments'/);
    expect(() => resolveOptions({ memorySizes: 'gateway' })).toThrow(/'memorySizes'/);
    expect(() => resolveOptions({ memorySizes: 'gateway:64' })).toThrow(/'memorySizes.gateway'/);
    expect(() => resolveOptions({ reservedConcurrency: 'gateway:0' })).toThrow(/'reservedConcurrency.gateway'/);
    expect(() => resolveOptions({ reservedConcurrency: 'gateway' })).toThrow(/'reservedConcurrency'/);
    expect(() => resolveOptions({ accountConcurrency: '5' })).toThrow(/'accountConcurrency'/);
    expect(resolveOptions({ accountConcurrency: '3000' }).accountConcurrency).toBe(3000);
  });

  it('refuses group names that are not endpoint groups', () => {
    expect(() => buildApp(testApp({ context: { 'aws:cdk:bundling-stacks': [] } }), { ...BASE, memorySizes: { gatway: 512 }, nag: false })).toThrow(
      /'memorySizes' names 'gatway'/,
    );
    expect(() =>
      buildApp(testApp({ context: { 'aws:cdk:bundling-stacks': [] } }), {
        ...BASE,
        capacity: 'managed-instances',
        managedInstances: { ...DEFAULT_MANAGED_INSTANCES, groups: ['chat'] },
        nag: false,
      }),
    ).toThrow(/'managedInstanceGroups' names 'chat'/);
    expect(() => buildApp(testApp({ context: { 'aws:cdk:bundling-stacks': [] } }), { ...BASE, reservedConcurrency: { chat: 5 }, nag: false })).toThrow(
      /'reservedConcurrency' names 'chat'/,
    );
    // A group on Managed Instances scales by execution environments, not reserved concurrency.
    expect(() =>
      buildApp(testApp({ context: { 'aws:cdk:bundling-stacks': [] } }), {
        ...BASE,
        capacity: 'managed-instances',
        managedInstances: DEFAULT_MANAGED_INSTANCES,
        reservedConcurrency: { gateway: 100 },
        nag: false,
      }),
    ).toThrow(/'reservedConcurrency' names 'gateway', which runs on Managed Instances/);
  });
});

describe('on-demand (default)', () => {
  it('creates no capacity provider, VPC or operator role, and no function carries a capacity provider', () => {
    expect(onDemand.error?.message).toBeUndefined();
    onDemand.api.resourceCountIs('AWS::Lambda::CapacityProvider', 0);
    onDemand.api.resourceCountIs('AWS::EC2::VPC', 0);
    onDemand.api.resourceCountIs('AWS::EC2::SecurityGroup', 0);
    onDemand.api.resourceCountIs('AWS::Lambda::Function', ENDPOINT_GROUPS.length);
    onDemand.api.resourceCountIs('AWS::IAM::Role', ENDPOINT_GROUPS.length);
    for (const group of ENDPOINT_GROUPS) expect(functionProps(onDemand, group.name).CapacityProviderConfig, group.name).toBeUndefined();
  });

  it('reserves concurrency for the groups reservedConcurrency names, and none for the others', () => {
    for (const group of ENDPOINT_GROUPS) {
      const expected = group.name === 'gateway' ? 800 : group.name === 'admin' ? 20 : undefined;
      expect(functionProps(onDemand, group.name).ReservedConcurrentExecutions, group.name).toBe(expected);
    }
  });

  it('gives each group its memorySizes entry and the rest memorySize', () => {
    for (const group of ENDPOINT_GROUPS) {
      const expected = group.name === 'policies' ? 512 : group.name === 'guardrails' ? 256 : 1024;
      expect(functionProps(onDemand, group.name).MemorySize, group.name).toBe(expected);
    }
  });
});

describe('managed instances, new VPC', () => {
  it('is cdk-nag clean', () => {
    expect(managed.error?.message).toBeUndefined();
  });

  it('adds one capacity provider, a VPC with private subnets, NAT, a DynamoDB gateway endpoint and rejected-traffic flow logs', () => {
    const t = managed.api;
    t.resourceCountIs('AWS::Lambda::CapacityProvider', 1);
    t.resourceCountIs('AWS::EC2::VPC', 1);
    // One public and one private subnet per AZ, three AZs named explicitly (not the two an
    // environment-agnostic stack would otherwise get).
    t.resourceCountIs('AWS::EC2::Subnet', 2 * DEFAULT_MANAGED_INSTANCES.maxAzs);
    t.resourceCountIs('AWS::EC2::NatGateway', DEFAULT_MANAGED_INSTANCES.natGateways);
    t.resourceCountIs('AWS::EC2::VPCEndpoint', 1);
    t.hasResourceProperties('AWS::EC2::VPCEndpoint', {
      VpcEndpointType: 'Gateway',
      ServiceName: { 'Fn::Join': ['', ['com.amazonaws.', { Ref: 'AWS::Region' }, '.dynamodb']] },
    });
    t.resourceCountIs('AWS::EC2::FlowLog', 1);
    t.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'REJECT' });
    t.resourceCountIs('AWS::Lambda::Function', ENDPOINT_GROUPS.length);
    // Function roles, the operator role, the flow-log role.
    t.resourceCountIs('AWS::IAM::Role', ENDPOINT_GROUPS.length + 2);

    const sgs = Object.values(t.findResources('AWS::EC2::SecurityGroup'));
    expect(sgs).toHaveLength(1);
    const sg = sgs[0]!.Properties as Json;
    expect(sg.SecurityGroupIngress).toBeUndefined();
    expect(sg.SecurityGroupEgress).toEqual([expect.objectContaining({ CidrIp: '0.0.0.0/0', IpProtocol: '-1' })]);

    const cp = Object.values(t.findResources('AWS::Lambda::CapacityProvider'))[0]!.Properties as Json;
    const mc = managed.stacks.api.managedCapacity!;
    expect(cp).toMatchObject({
      InstanceRequirements: { AllowedInstanceTypes: [...DEFAULT_MANAGED_INSTANCES.instanceTypes], Architectures: ['arm64'] },
      CapacityProviderScalingConfig: { MaxVCpuCount: DEFAULT_MANAGED_INSTANCES.maxVCpuCount, ScalingMode: 'Auto' },
      PermissionsConfig: { CapacityProviderOperatorRoleArn: { 'Fn::GetAtt': [logicalId(managed.stacks.api, mc.operatorRole.node.defaultChild), 'Arn'] } },
    });
    const vpcConfig = cp.VpcConfig as { SubnetIds: Array<{ Ref: string }>; SecurityGroupIds: unknown[] };
    expect(vpcConfig.SubnetIds).toHaveLength(DEFAULT_MANAGED_INSTANCES.maxAzs);
    // The instances run in the private subnets, whose default route is a NAT gateway.
    const routes = Object.values(t.findResources('AWS::EC2::Route')).map((r) => r.Properties as Json);
    const associations = Object.values(t.findResources('AWS::EC2::SubnetRouteTableAssociation')).map((r) => r.Properties as Json);
    for (const subnet of vpcConfig.SubnetIds) {
      const table = associations.find((a) => JSON.stringify(a.SubnetId) === JSON.stringify(subnet))!.RouteTableId;
      const route = routes.find((r) => JSON.stringify(r.RouteTableId) === JSON.stringify(table) && r.DestinationCidrBlock === '0.0.0.0/0')!;
      expect(route.NatGatewayId, subnet.Ref).toBeDefined();
    }
  });

  it('puts the gateway group on the capacity provider (2048 MB, concurrency, three environments) and leaves the other groups and every worker on demand', () => {
    const cpId = logicalId(managed.stacks.api, managed.stacks.api.managedCapacity!.capacityProvider.node.defaultChild);
    for (const group of ENDPOINT_GROUPS) {
      const p = functionProps(managed, group.name);
      if (DEFAULT_MANAGED_INSTANCES.groups.includes(group.name as 'gateway')) {
        expect(p, group.name).toMatchObject({
          MemorySize: DEFAULT_MANAGED_INSTANCES.memorySize,
          Architectures: ['arm64'],
          PublishToLatestPublished: true,
          CapacityProviderConfig: {
            LambdaManagedInstancesCapacityProviderConfig: {
              CapacityProviderArn: { 'Fn::GetAtt': [cpId, 'Arn'] },
              PerExecutionEnvironmentMaxConcurrency: DEFAULT_MANAGED_INSTANCES.perExecutionEnvironmentMaxConcurrency,
              ExecutionEnvironmentMemoryGiBPerVCpu: DEFAULT_MANAGED_INSTANCES.memoryGiBPerVCpu,
            },
          },
          FunctionScalingConfig: { MinExecutionEnvironments: DEFAULT_MANAGED_INSTANCES.minExecutionEnvironments },
        });
      } else {
        expect(p.CapacityProviderConfig, group.name).toBeUndefined();
        expect(p.MemorySize, group.name).toBe(1024);
      }
    }
    // A switch of mode replaces the function (Lambda cannot remove a capacity provider from one).
    const id = (s: Synth, group: string) => logicalId(s.stacks.api, s.stacks.api.functions[group]!.function.node.defaultChild);
    expect(id(managed, 'gateway')).not.toBe(id(onDemand, 'gateway'));
    expect(id(managed, 'admin')).toBe(id(onDemand, 'admin'));
    for (const fn of Object.values(managed.workflows.findResources('AWS::Lambda::Function'))) {
      expect((fn.Properties as Json).CapacityProviderConfig).toBeUndefined();
    }
    managed.workflows.resourceCountIs('AWS::Lambda::CapacityProvider', 0);
  });

  it('gives Lambda an operator role with the documented managed policy, assumable only for this account', () => {
    const mc = managed.stacks.api.managedCapacity!;
    const role = managed.api.findResources('AWS::IAM::Role')[logicalId(managed.stacks.api, mc.operatorRole.node.defaultChild)]!.Properties as Json;
    expect(role.AssumeRolePolicyDocument).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Action: 'sts:AssumeRole',
          Effect: 'Allow',
          Principal: { Service: 'lambda.amazonaws.com' },
          Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
        },
      ],
    });
    expect(role.ManagedPolicyArns).toEqual([{ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:iam::aws:policy/${OPERATOR_POLICY}`]] }]);
    expect(role.Policies).toBeUndefined();
    // The function roles are unchanged by the mode: same statements as on demand.
    for (const group of ENDPOINT_GROUPS) {
      const statements = (s: Synth) => {
        const roleId = logicalId(s.stacks.api, s.stacks.api.functions[group.name]!.role.node.defaultChild);
        return Object.values(s.api.findResources('AWS::IAM::Policy'))
          .filter((p) => JSON.stringify((p.Properties as Json).Roles) === JSON.stringify([{ Ref: roleId }]))
          .map((p) => ((p.Properties as Json).PolicyDocument as { Statement: unknown[] }).Statement);
      };
      expect(statements(managed), group.name).toEqual(statements(onDemand));
    }
  });
});

describe('managed instances, existing VPC', () => {
  it('is cdk-nag clean and creates no VPC, only a security group in the given VPC', () => {
    expect(existingVpc.error?.message).toBeUndefined();
    const t = existingVpc.api;
    t.resourceCountIs('AWS::EC2::VPC', 0);
    t.resourceCountIs('AWS::EC2::NatGateway', 0);
    t.resourceCountIs('AWS::EC2::SecurityGroup', 1);
    t.hasResourceProperties('AWS::EC2::SecurityGroup', { VpcId: 'vpc-0123456789abcdef0' });
    const cp = Object.values(t.findResources('AWS::Lambda::CapacityProvider'))[0]!.Properties as Json;
    expect(cp).toMatchObject({
      VpcConfig: { SubnetIds: ['subnet-0123456789abcdef0', 'subnet-0123456789abcdef1', 'subnet-0123456789abcdef2'] },
      InstanceRequirements: { AllowedInstanceTypes: ['m7g.large'] },
      CapacityProviderScalingConfig: { MaxVCpuCount: 24 },
    });
  });

  it('puts every listed group on the provider with the given concurrency and bounds', () => {
    for (const group of ['gateway', 'prompts']) {
      expect(functionProps(existingVpc, group), group).toMatchObject({
        CapacityProviderConfig: { LambdaManagedInstancesCapacityProviderConfig: { PerExecutionEnvironmentMaxConcurrency: 256 } },
        FunctionScalingConfig: { MinExecutionEnvironments: 3, MaxExecutionEnvironments: 12 },
      });
    }
    expect(functionProps(existingVpc, 'admin').CapacityProviderConfig).toBeUndefined();
  });
});
