"""Infrastructure tests: CDK synth, cdk-nag, cfn-lint and the Lambda packaging."""
