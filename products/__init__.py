"""Our products: the distributor's own catalogue, and the links that tie each supplier's
lines (pricefeed.PriceItem, by config and supplier SKU) to them."""
