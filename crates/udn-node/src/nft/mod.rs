//! nftables as text transactions (knftables-style): render, `nft -f -`, read back.
