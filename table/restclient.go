package table

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// ErrCatalogURI means Config.Catalog names no catalog the lake can use.
var ErrCatalogURI = errors.New("unusable catalog URI")

// catalogAPI is what a Lake needs of its catalog: iceberg-go's interface
// (table/catalog's embedded catalog, or a REST client) and Close.
type catalogAPI interface {
	icecat.Catalog
	Close() error
}

// restScheme prefixes a REST catalog's URI in Config.Catalog.
const restScheme = "rest+"

// openREST opens the Iceberg REST catalog Config.Catalog names
// ("rest+http://host:port/path" or "rest+https://..."): commits go through
// its endpoint with the spec's requirements, so the compare-and-swap is the
// catalog server's. props (the warehouse's file IO settings) configure the
// IO of the tables it loads.
func openREST(ctx context.Context, cfg Config, props iceberg.Properties) (catalogAPI, error) {
	uri, ok := strings.CutPrefix(cfg.Catalog, restScheme)
	if !ok || !strings.HasPrefix(uri, "http://") && !strings.HasPrefix(uri, "https://") {
		return nil, fmt.Errorf("open lake: %w: %q: want rest+http://host:port/path or rest+https://host/path", ErrCatalogURI, cfg.Catalog)
	}
	opts := []rest.Option{rest.WithAdditionalProps(props)}
	if cfg.CatalogToken != "" {
		opts = append(opts, rest.WithOAuthToken(cfg.CatalogToken))
	}
	if cfg.CatalogWarehouse != "" {
		opts = append(opts, rest.WithWarehouseLocation(cfg.CatalogWarehouse))
	}
	if svc := cfg.CatalogSigV4; svc != "" {
		// AWS Glue's and S3 Tables' Iceberg REST endpoints sign requests
		// with SigV4: the S3 settings' region and keys, else the AWS SDK's
		// default chain.
		ac := aws.Config{Region: cfg.S3.Region}
		if cfg.S3.AccessKeyID != "" {
			ac.Credentials = credentials.NewStaticCredentialsProvider(cfg.S3.AccessKeyID, cfg.S3.SecretAccessKey, "")
			opts = append(opts, rest.WithAwsConfig(ac))
		}
		opts = append(opts, rest.WithSigV4RegionSvc(cfg.S3.Region, svc))
	}
	c, err := rest.NewCatalog(ctx, "lakehouse", uri, opts...)
	if err != nil {
		return nil, fmt.Errorf("open lake: REST catalog %s: %w", uri, err)
	}
	return c, nil
}
