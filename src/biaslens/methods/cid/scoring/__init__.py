"""The requests stage of CID: prompt pairs to contrastive generation requests."""
