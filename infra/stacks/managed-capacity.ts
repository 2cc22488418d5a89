import { Annotations, Fn, Stack, Validations } from 'aws-cdk-lib';
import {
  CfnSecurityGroup,
  FlowLogDestination,
  FlowLogTrafficType,
  GatewayVpcEndpointAwsService,
  InstanceType,
  SecurityGroup,
  Subnet,
  SubnetType,
  Vpc,
  type ISecurityGroup,
  type ISubnet,
} from 'aws-cdk-lib/aws-ec2';
import { ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, CapacityProvider, InstanceTypeFilter, ScalingOptions, type Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { ManagedInstancesOptions } from './options';

/** The AWS managed policy Lambda documents for the capacity provider's operator role. */
export const OPERATOR_POLICY = 'AWSLambdaManagedEC2ResourceOperator';

const REASONS = {
  operatorPolicy:
    'The capacity provider operator role needs the AWS managed policy AWSLambdaManagedEC2ResourceOperator: Lambda documents it as the policy for managing the instances, network interfaces and launch templates of Lambda Managed Instances, and AWS updates it when the service needs new EC2 actions (it gained ec2:DescribeVpcEncryptionControls and CloudWatch Logs actions in 2026); a hand-written copy would silently break on those updates. The role can only be assumed by lambda.amazonaws.com from this account.',
} as const;

export interface ManagedCapacityProps {
  stage: string;
  settings: ManagedInstancesOptions;
  logRetentionDays: RetentionDays;
}

/**
 * Lambda Managed Instances for the request-serving functions: the network the instances
 * run in (an existing VPC's subnets, or a new VPC whose private subnets reach the model
 * providers through NAT and DynamoDB through a free gateway endpoint), a security group
 * with no inbound rule, the operator role Lambda assumes to manage the EC2 capacity, and
 * one capacity provider (arm64, the configured instance types, a vCPU ceiling).
 * `attach` moves a function onto it with the per-environment concurrency and scaling.
 */
export class ManagedCapacity extends Construct {
  readonly capacityProvider: CapacityProvider;
  readonly operatorRole: Role;
  readonly subnets: ISubnet[];
  readonly securityGroups: ISecurityGroup[];
  /** Only when the stack created the VPC. */
  readonly vpc?: Vpc;
  private readonly settings: ManagedInstancesOptions;

  constructor(scope: Construct, id: string, props: ManagedCapacityProps) {
    super(scope, id);
    const s = props.settings;
    this.settings = s;

    if (s.vpcId !== undefined) {
      // No lookups (synthesis stays offline): the subnets and the VPC are taken by id.
      this.subnets = s.subnetIds!.map((subnetId, i) => Subnet.fromSubnetId(this, `Subnet${i}`, subnetId));
      if (s.securityGroupIds?.length) {
        this.securityGroups = s.securityGroupIds.map((sg, i) => SecurityGroup.fromSecurityGroupId(this, `SecurityGroup${i}`, sg));
      } else {
        const sg = new CfnSecurityGroup(this, 'SecurityGroup', {
          vpcId: s.vpcId,
          groupDescription: `AI gateway (${props.stage}) managed instances: outbound to model providers and AWS APIs, nothing inbound`,
          securityGroupEgress: [
            { ipProtocol: '-1', cidrIp: '0.0.0.0/0', description: 'Model providers (any HTTPS host or custom host), DynamoDB, KMS, CloudWatch' },
          ],
        });
        this.securityGroups = [SecurityGroup.fromSecurityGroupId(this, 'SecurityGroupRef', sg.attrGroupId)];
      }
    } else {
      const flowLogs = new LogGroup(this, 'FlowLogs', { retention: props.logRetentionDays });
      // Environment-agnostic stacks see two AZs by default; name maxAzs of them explicitly.
      const availabilityZones = Array.from({ length: s.maxAzs }, (_, i) => Fn.select(i, Fn.getAzs()));
      this.vpc = new Vpc(this, 'Vpc', {
        availabilityZones,
        natGateways: s.natGateways,
        subnetConfiguration: [
          { name: 'public', subnetType: SubnetType.PUBLIC, cidrMask: 24 },
          { name: 'instances', subnetType: SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 20 },
        ],
        // DynamoDB traffic stays off the NAT gateways (no data-processing charge).
        gatewayEndpoints: { DynamoDb: { service: GatewayVpcEndpointAwsService.DYNAMODB } },
        // Rejected traffic only: enough to debug a security group, a fraction of the volume.
        flowLogs: { Rejected: { destination: FlowLogDestination.toCloudWatchLogs(flowLogs), trafficType: FlowLogTrafficType.REJECT } },
        restrictDefaultSecurityGroup: false,
      });
      this.subnets = this.vpc.selectSubnets({ subnetType: SubnetType.PRIVATE_WITH_EGRESS }).subnets;
      this.securityGroups = [
        new SecurityGroup(this, 'SecurityGroup', {
          vpc: this.vpc,
          description: `AI gateway (${props.stage}) managed instances: outbound to model providers and AWS APIs, nothing inbound`,
          allowAllOutbound: true,
        }),
      ];
    }

    const account = Stack.of(this).account;
    this.operatorRole = new Role(this, 'OperatorRole', {
      description: `AI gateway (${props.stage}): Lambda manages the managed-instances EC2 capacity with this role`,
      // Confused-deputy guard: only Lambda acting for this account may assume it.
      assumedBy: new ServicePrincipal('lambda.amazonaws.com', { conditions: { StringEquals: { 'aws:SourceAccount': account } } }),
      managedPolicies: [ManagedPolicy.fromAwsManagedPolicyName(OPERATOR_POLICY)],
    });
    Validations.of(this.operatorRole).acknowledge({
      id: `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${OPERATOR_POLICY}]`,
      reason: REASONS.operatorPolicy,
    });

    this.capacityProvider = new CapacityProvider(this, 'CapacityProvider', {
      subnets: this.subnets,
      securityGroups: this.securityGroups,
      operatorRole: this.operatorRole,
      architectures: [Architecture.ARM_64],
      instanceTypeFilter: InstanceTypeFilter.allow(s.instanceTypes.map((t) => new InstanceType(t))),
      maxVCpuCount: s.maxVCpuCount,
      scalingOptions: ScalingOptions.auto(),
    });
  }

  /** Runs `fn` on the capacity provider (its memory must already be the managed-instances size). */
  attach(fn: LambdaFunction): void {
    const s = this.settings;
    this.capacityProvider.addFunction(fn, {
      perExecutionEnvironmentMaxConcurrency: s.perExecutionEnvironmentMaxConcurrency,
      executionEnvironmentMemoryGiBPerVCpu: s.memoryGiBPerVCpu,
      // CloudFormation publishes $LATEST.PUBLISHED, which unqualified invokes (API Gateway's) reach.
      publishToLatestPublished: true,
      latestPublishedScalingConfig: {
        minExecutionEnvironments: s.minExecutionEnvironments,
        ...(s.maxExecutionEnvironments !== undefined ? { maxExecutionEnvironments: s.maxExecutionEnvironments } : {}),
      },
    });
    Annotations.of(fn).acknowledgeInfo(
      'aws-lambda:Function.CapacityProviderConfiguration',
      'Known and documented (docs/deploy.md, Capacity): going back to on-demand means replacing the function (a new stage or a destroy/deploy), not an update.',
    );
  }
}
