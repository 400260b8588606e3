"""The inbox: one DynamoDB item per provider event, keyed `{provider}#{event_id}`."""
