// Point aztables (github.com/Azure/azure-sdk-for-go/sdk/data/aztables) at tablestore and do a
// round trip. Reads the connection string from TABLESTORE_CONNECTION_STRING (default: the
// local server on port 10002); exits non-zero on any failure.
//
//	go get github.com/Azure/azure-sdk-for-go/sdk/data/aztables
//	go run tables_example.go
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

const defaultConnectionString = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;" +
	"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
	"TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"

func entity(pk, rk string, props map[string]any) []byte {
	b, err := json.Marshal(aztables.EDMEntity{
		Entity:     aztables.Entity{PartitionKey: pk, RowKey: rk},
		Properties: props,
	})
	if err != nil {
		log.Fatal(err)
	}
	return b
}

func main() {
	ctx := context.Background()
	connectionString := os.Getenv("TABLESTORE_CONNECTION_STRING")
	if connectionString == "" {
		connectionString = defaultConnectionString
	}
	service, err := aztables.NewServiceClientFromConnectionString(connectionString, nil)
	if err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprintf("example%d", os.Getpid())
	if _, err := service.CreateTable(ctx, name, nil); err != nil {
		log.Fatal(err)
	}
	defer service.DeleteTable(ctx, name, nil)
	table := service.NewClient(name)

	if _, err := table.AddEntity(ctx, entity("nl", "1", map[string]any{"Name": "Ada", "Age": int32(36)}), nil); err != nil {
		log.Fatal(err)
	}
	if _, err := table.UpsertEntity(ctx, entity("nl", "2", map[string]any{"Name": "Bob", "Age": int32(41)}),
		&aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
		log.Fatal(err)
	}

	got, err := table.GetEntity(ctx, "nl", "1", nil)
	if err != nil {
		log.Fatal(err)
	}
	var ada aztables.EDMEntity
	if err := json.Unmarshal(got.Value, &ada); err != nil || ada.Properties["Name"] != "Ada" {
		log.Fatalf("GetEntity returned %s (%v)", got.Value, err)
	}

	var older []string
	pager := table.NewListEntitiesPager(&aztables.ListEntitiesOptions{
		Filter: to.Ptr("PartitionKey eq 'nl' and Age gt 40"),
	})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, raw := range page.Entities {
			var e aztables.EDMEntity
			if err := json.Unmarshal(raw, &e); err != nil {
				log.Fatal(err)
			}
			older = append(older, e.RowKey)
		}
	}
	if len(older) != 1 || older[0] != "2" {
		log.Fatalf("query returned %v", older)
	}

	// An entity group transaction: all or nothing, one partition.
	_, err = table.SubmitTransaction(ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeInsertReplace, Entity: entity("nl", "3", map[string]any{"Name": "Cy"})},
		{ActionType: aztables.TransactionTypeDelete, Entity: entity("nl", "1", nil)},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = table.GetEntity(ctx, "nl", "1", nil)
	var respErr *azcore.ResponseError
	if !errors.As(err, &respErr) || respErr.StatusCode != http.StatusNotFound {
		log.Fatalf("entity 1 after the transaction: %v", err)
	}
	fmt.Println("go example: OK")
}
