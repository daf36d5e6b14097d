"""Charts (matplotlib PNG/SVG and the HTML page) from results and analysis; no physics."""
