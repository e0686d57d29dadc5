#!/bin/sh
# The README's curl walk-through, runnable: KEY=svck_… [API=http://127.0.0.1:3000/api/v1] sh scripts/walkthrough.sh
set -eu
API=${API:-http://127.0.0.1:3000/api/v1}
: "${KEY:?set KEY to the API key printed at first start}"
j() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s);console.log(process.argv[1].split(".").reduce((o,k)=>o[k],v))})' "$1"; }
post() { curl -sf -X "$1" "$API$2" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d "$3"; }

CID=$(post POST /conversations '{"subject":"Login fails","customer":{"email":"ada@example.com","name":"Ada","company":"Acme"}}' | j conversation.id)
echo "conversation $CID"
post POST /conversations/$CID/messages '{"role":"user","body":"I cannot log in since yesterday."}' >/dev/null
post POST /conversations/$CID/messages '{"role":"agent","body":"Thanks Ada, we are looking into it."}' >/dev/null
echo "status after the agent reply: $(curl -sf $API/conversations/$CID -H "Authorization: Bearer $KEY" | j conversation.status)"
echo "status after PATCH: $(post PATCH /conversations/$CID '{"status":"solved"}' | j conversation.status)"
IID=$(post POST /issues "{\"subject\":\"SSO login broken\",\"conversationId\":\"$CID\",\"tags\":[\"sso\"],\"priority\":\"high\"}" | j issue.id)
echo "issue $IID:"
curl -sf $API/issues/$IID -H "Authorization: Bearer $KEY"; echo
